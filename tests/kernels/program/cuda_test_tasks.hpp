#pragma once
// Small CUDA tasks covering every CUDA group kind, the new unary ops and numpy-broadcast side inputs, with
// odd sizes so vector loops have tails and tiles have ragged edges. Written inline so the tests do not
// depend on the task suite's files (kernels/tasks/cuda).
#include <string>
#include <vector>

#include "tests/kernels/program/test_tasks.hpp"

namespace crucible::kernels::testing {

inline task_spec cuda_task(std::string name, std::vector<tensor_spec> inputs, std::vector<op_spec> ops) {
  task_spec t = make(std::move(name), std::move(inputs), std::move(ops), true).task;
  t.targets = {"cuda"};
  return t;
}

/// Tasks whose groups are all of the emit-core kinds (elementwise, row, gemm, gemv, bmm, attention).
inline std::vector<task_spec> cuda_core_tasks() {
  return {
      cuda_task("cu_ew_new", {in("x", {2, 3, 5, 7}), in("c", {3, 1, 1}, true), in("r", {7}, true)},
                {op("elu", {}, {{"alpha", 0.5}}), op("add", {"c"}), op("selu"), op("hardswish"),
                 op("mul", {"r"}), op("hardsigmoid"), op("softsign"), op("mish"),
                 op("mul_scalar", {}, {{"s", 2.0}}), op("add_scalar", {}, {{"s", -0.5}}), op("gelu")}),
      cuda_task(
          "cu_ew_old", {in("x", {1001}), in("y", {1001}), in("s", {1})},
          {op("exp"), op("relu"), op("neg"), op("neg"), op("sub", {"y"}), op("tanh"), op("softplus"),
           op("mul", {"s"}), op("clamp", {}, {{"lo", -1.0}, {"hi", 2.0}}), op("silu"), op("gelu_tanh")}),
      cuda_task("cu_softmax", {in("x", {3, 5, 77}), in("b", {77}, true)},
                {op("mul_scalar", {}, {{"s", 0.5}}), op("add", {"b"}), op("softmax"), op("sigmoid")}),
      cuda_task("cu_log_softmax", {in("x", {6, 1030})}, {op("tanh"), op("log_softmax")}),
      cuda_task("cu_layer_norm", {in("x", {4, 3, 65}), in("w", {65}, true), in("b", {65}, true)},
                {op("layer_norm", {"w", "b"}), op("gelu")}),
      cuda_task("cu_rms_norm", {in("x", {9, 33}), in("w", {33}, true)}, {op("rms_norm", {"w"}), op("abs")}),
      cuda_task(
          "cu_row_reduce", {in("x", {4, 6, 45}), in("o", {6}, true)},
          {op("add_scalar", {}, {{"s", 1.0}}), op("sigmoid"), op("row_max"), op("add", {"o"}), op("exp")}),
      cuda_task("cu_row_mean", {in("x", {10, 31})},
                {op("mul_scalar", {}, {{"s", 3.0}}), op("add_scalar", {}, {{"s", 1.0}}), op("row_mean"),
                 op("tanh")}),
      cuda_task("cu_gemm_bias_relu", {in("x", {37, 40}), in("w", {40, 35}, true), in("b", {35}, true)},
                {op("matmul", {"w"}), op("add", {"b"}), op("relu")}),
      cuda_task("cu_gemm_batched", {in("x", {2, 7, 24}), in("w", {24, 70}, true), in("z", {2, 7, 70})},
                {op("matmul", {"w"}), op("gelu"), op("mul", {"z"})}),
      cuda_task("cu_gemm_rowsum", {in("x", {11, 30}), in("w", {30, 26}, true), in("b", {26}, true)},
                {op("matmul", {"w"}), op("add", {"b"}), op("mul_scalar", {}, {{"s", 0.5}}), op("row_sum"),
                 op("sigmoid")}),
      cuda_task("cu_gemm_softmax", {in("x", {16, 32}), in("w", {32, 48}, true)},
                {op("matmul", {"w"}), op("softmax")}),
      cuda_task("cu_bmm", {in("x", {3, 17, 20}), in("w", {3, 20, 9}, true)}, {op("bmm", {"w"}), op("gelu")}),
      cuda_task("cu_attention_causal",
                {in("q", {2, 3, 19, 16}), in("k", {2, 3, 19, 16}), in("v", {2, 3, 19, 16})},
                {op("attention", {"k", "v"}, {{"causal", 1.0}}), op("mul_scalar", {}, {{"s", 2.0}})}),
      cuda_task("cu_attention", {in("q", {1, 2, 33, 40}), in("k", {1, 2, 45, 40}), in("v", {1, 2, 45, 40})},
                {op("attention", {"k", "v"}, {{"scale", 0.3}})}),
  };
}

/// Tasks of the emit-ops kinds (conv, pool, channel_norm, dim_reduce, scan, loss), with prologues and
/// epilogues where the kinds admit them.
inline std::vector<task_spec> cuda_ops_tasks() {
  return {
      cuda_task("cu_conv2d", {in("x", {2, 3, 10, 10}), in("w", {4, 3, 3, 3}, true), in("b", {4}, true)},
                {op("conv2d", {"w", "b"}), op("relu")}),
      cuda_task("cu_pool", {in("x", {2, 3, 8, 8})}, {op("max_pool2d", {}, {{"kernel", 2.0}}), op("tanh")}),
      cuda_task("cu_batch_norm", {in("x", {4, 3, 5, 5}), in("w", {3}, true), in("b", {3}, true)},
                {op("relu"), op("batch_norm", {"w", "b"}), op("sigmoid")}),
      cuda_task("cu_reduce", {in("x", {4, 6, 5})},
                {op("exp"), op("reduce_sum", {}, {{"dim", 1.0}}), op("neg")}),
      cuda_task("cu_cumsum", {in("x", {5, 40})}, {op("square"), op("cumsum")}),
      cuda_task("cu_mse", {in("x", {8, 16}), in("t", {8, 16})}, {op("tanh"), op("mse_loss", {"t"})}),
  };
}

}  // namespace crucible::kernels::testing
