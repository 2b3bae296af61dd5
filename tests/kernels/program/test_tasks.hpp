#pragma once
// Small tasks covering every op, group kind and rewrite, with odd sizes so that vector and unrolled loops
// have tails. Written inline so the tests do not depend on the task suite's files.
#include <map>
#include <string>
#include <vector>

#include "messages/task.hpp"
#include "tests/task_builders.hpp"

namespace crucible::kernels::testing {

inline tensor_spec in(std::string name, std::vector<int64_t> shape, bool param = false) {
  return crucible::testing::input(std::move(name), std::move(shape), param);
}
using crucible::testing::op;

struct test_task {
  task_spec task;
  bool heavy_ok = true;  ///< no signed sums: heavy-tailed inputs keep the float error within tolerance
};

inline test_task make(std::string name, std::vector<tensor_spec> inputs, std::vector<op_spec> ops,
                      bool heavy_ok) {
  task_spec t;
  t.name = std::move(name);
  t.family = "test";
  t.inputs = std::move(inputs);
  t.ops = std::move(ops);
  return {t, heavy_ok};
}

inline std::vector<test_task> test_tasks() {
  return {
      make("ew_a", {in("x", {5, 67}), in("b", {67}, true), in("y", {5, 67})},
           {op("gelu"), op("mul_scalar", {}, {{"s", 1.5}}), op("add", {"b"}), op("tanh"),
            op("add_scalar", {}, {{"s", 0.1}}), op("silu"), op("mul", {"y"})},
           true),
      make("ew_b", {in("x", {3, 5, 29}), in("t", {29}, true)},
           {op("leaky_relu", {}, {{"alpha", 0.2}}), op("sigmoid"), op("softplus"), op("sub", {"t"}),
            op("abs"), op("neg"), op("square"), op("clamp", {}, {{"lo", -1.0}, {"hi", 3.0}}), op("exp"),
            op("gelu_tanh"), op("relu")},
           true),
      make("ew_redundant", {in("x", {301})},
           {op("exp"), op("relu"), op("neg"), op("neg"), op("abs"), op("softplus"), op("leaky_relu")}, true),
      make("softmax_scaled", {in("x", {9, 100})},
           {op("mul_scalar", {}, {{"s", 0.125}}), op("add_scalar", {}, {{"s", 0.5}}), op("softmax"),
            op("mul_scalar", {}, {{"s", 2.0}})},
           true),
      make("log_softmax", {in("x", {4, 6, 33}), in("m", {33}, true)},
           {op("add", {"m"}), op("log_softmax"), op("tanh")}, true),
      make("layer_norm", {in("x", {6, 70}), in("w", {70}, true), in("b", {70}, true)},
           {op("layer_norm", {"w", "b"}), op("gelu")}, true),
      make("layer_norm_plain", {in("x", {7, 19})}, {op("sigmoid"), op("layer_norm", {}, {{"eps", 1e-3}})},
           true),
      make("rms_norm", {in("x", {5, 45}), in("w", {45}, true), in("r", {5, 45})},
           {op("tanh"), op("rms_norm", {"w"}), op("add", {"r"})}, true),
      make("row_sum", {in("x", {8, 53}), in("o", {8})},
           {op("square"), op("row_sum"), op("sigmoid"), op("add", {"o"})}, true),
      make("row_max_monotone", {in("x", {2, 3, 41}), in("o", {3}, true)},
           {op("add_scalar", {}, {{"s", 1.0}}), op("sigmoid"), op("mul_scalar", {}, {{"s", 2.0}}),
            op("row_max"), op("add", {"o"})},
           true),
      make("row_mean_affine", {in("x", {10, 31})},
           {op("mul_scalar", {}, {{"s", 3.0}}), op("add_scalar", {}, {{"s", 1.0}}), op("row_mean"),
            op("tanh")},
           false),
      make("gemm_bias_relu", {in("x", {13, 40}), in("w", {40, 35}, true), in("b", {35}, true)},
           {op("matmul", {"w"}), op("add", {"b"}), op("relu")}, false),
      make("gemm_batched", {in("x", {2, 7, 24}), in("w", {24, 50}, true), in("z", {2, 7, 50})},
           {op("matmul", {"w"}), op("gelu"), op("mul", {"z"})}, false),
      make("gemm_rowsum", {in("x", {11, 30}), in("w", {30, 26}, true), in("b", {26}, true)},
           {op("matmul", {"w"}), op("add", {"b"}), op("mul_scalar", {}, {{"s", 0.5}}), op("row_sum"),
            op("sigmoid")},
           false),
      make("gemm_rowmean", {in("x", {9, 20}), in("w", {20, 17}, true), in("s", {17}, true)},
           {op("matmul", {"w"}), op("mul", {"s"}), op("add_scalar", {}, {{"s", 1.0}}), op("row_mean")},
           false),
      make("gemm_rowmax", {in("x", {6, 16}), in("w", {16, 48}, true)},
           {op("matmul", {"w"}), op("exp"), op("row_max")}, false),
      make("gemm_softmax", {in("x", {16, 32}), in("w", {32, 48}, true)}, {op("matmul", {"w"}), op("softmax")},
           false),
  };
}

}  // namespace crucible::kernels::testing
