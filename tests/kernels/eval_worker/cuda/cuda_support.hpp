#pragma once
// Shared pieces of the GPU tests (label gpu): whether a device is there, the CUDA evaluation config the
// tests use (configs/gpu.yaml's benchmark settings, a private artifact cache), and one runner per process.
#include <cuda_runtime.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "actors/options/evaluation_config_of.hpp"
#include "kernels/eval/evaluate.hpp"
#include "kernels/task/task_loader.hpp"
#include "runtime/config/config.hpp"

namespace crucible::kernels::test {

/// Empty when a CUDA device and nvcc are there; else why the GPU tests skip.
inline std::string gpu_missing() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return "no CUDA device";
  if (find_nvcc().empty()) return "no nvcc (set CRUCIBLE_NVCC)";
  return {};
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string cuda_candidate(const std::string& name) {
  return read_file(std::string(CRUCIBLE_TEST_DATA_DIR) + "/candidates/cuda/" + name + ".cu");
}

inline const std::string& gpu_scratch_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("crucible-gpu-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

/// configs/gpu.yaml (embedded), with the artifact cache in this process's scratch directory and the
/// worker of this build tree.
inline evaluation_config gpu_eval_config() {
  auto cfg = runtime::parse_config(runtime::embedded_gpu_config(), {}, "embedded configs/gpu.yaml");
  if (!cfg) throw std::runtime_error(cfg.message());
  auto ec = actors::evaluation_config_of(*cfg);
  ec.compiler.cache_dir = gpu_scratch_dir() + "/artifacts";
  ec.worker.device = static_cast<int>(cfg->cuda.devices.front());
  ec.worker.worker_path = std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";
  ec.worker.log_path = gpu_scratch_dir() + "/worker.log";
  return ec;
}

inline const task_spec& cuda_task(const std::string& name) {
  static const auto suite = load_task_suite(default_task_dir(), "cuda");
  if (!suite) throw std::runtime_error(suite.message());
  for (const auto& t : *suite)
    if (t.name == name) return t;
  throw std::runtime_error("no CUDA task " + name);
}

}  // namespace crucible::kernels::test
