#pragma once
// compiler.*: how the compiler role builds candidates (kernels/eval/compiler.hpp). On the CUDA target every
// key the file leaves out takes nvcc's default (kernels::cuda_compiler_defaults for cuda.arch and
// cuda.cudnn_dir; cuda.nvcc names the compiler), and the cache defaults to RUN_DIR/compile_cache.
#include "kernels/eval/compiler.hpp"

namespace crucible::actors {

struct compiler_section : kernels::compiler_options {
  static constexpr const char* section_name = "compiler";
};

}  // namespace crucible::actors
