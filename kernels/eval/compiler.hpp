#pragma once
// Compiles candidate source into a shared object in a sandboxed subprocess: its own process group, CPU
// time, address space, file size and process limits, no network where the OS allows (a new network
// namespace), a wall-clock deadline. Artifacts and diagnostics are cached by the content hash of (source,
// flags, compiler identity), so identical source compiles once per cache directory.
#include <string>
#include <vector>

#include "messages/evaluation.hpp"

namespace crucible::kernels {

struct compiler_options {
  std::string target = "cpu";  ///< cpu (g++, candidate.cpp) | cuda (nvcc, candidate.cu)
  std::string cxx = "g++";
  std::vector<std::string> flags = {"-O3",   "-march=native", "-std=c++17",
                                    "-fPIC", "-shared",       "-fopenmp-simd"};
  std::vector<std::string> libs = {"-lblas"};
  std::string include_dir;  ///< where crucible_abi.h lives; empty: the source tree's kernels/abi
  std::vector<std::string> include_dirs;  ///< more -I (a cuDNN installed outside the CUDA toolkit)
  std::vector<std::string> lib_dirs;      ///< more -L, also the artifact's rpath
  std::string cache_dir;                  ///< required: artifacts and logs, named by content hash
  double timeout_s = 60.0;
  int64_t memory_mb = 2048;
  int64_t max_processes = 256;
  bool isolate_network = true;
  size_t max_log_bytes = 8192;
};

/// The CUDA target's defaults: find_nvcc(), -O3 -std=c++17 -arch=<arch> -Xcompiler -fPIC -shared, linked with
/// cuBLAS and cuDNN (-l:libcudnn.so.9: pip's cuDNN ships no unversioned name); cuDNN's include/ and lib/
/// from `cudnn_dir`, else from $CRUCIBLE_CUDNN_DIR, else wherever nvcc looks by itself. nvcc runs cicc,
/// ptxas and the host compiler under the address-space limit, hence more room than g++.
compiler_options cuda_compiler_defaults(const std::string& arch = "sm_90", const std::string& cudnn_dir = {});

/// $CRUCIBLE_NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc; empty when none exists.
std::string find_nvcc();

/// Compiles `source` for candidate `candidate_id`. Never throws: a compile error, a timeout or a sandbox
/// failure is a compile_result with ok == false and a log a person (or the policy) can act on.
compile_result compile_source(const std::string& candidate_id, const std::string& source,
                              const compiler_options& options);

/// A KernelBench candidate (`ModelNew` in Python) needs no compiler: its source is staged in the cache as
/// `<sha256>.py`, the artifact crucible-kernelbench-host executes. Python's own syntax errors come back from
/// the worker as a load error with the interpreter's message.
compile_result stage_module(const std::string& candidate_id, const std::string& source,
                            const compiler_options& options);

}  // namespace crucible::kernels
