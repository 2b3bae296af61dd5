#pragma once
// Small inline tasks for the policy tests: one per group kind and rewrite family, sizes kept small.
#include <map>
#include <string>
#include <vector>

#include "messages/prompt.hpp"
#include "messages/task.hpp"
#include "tests/task_builders.hpp"

namespace crucible::policies::testing {

inline tensor_spec tensor(std::string name, std::vector<int64_t> shape, bool param = false) {
  return crucible::testing::input(std::move(name), std::move(shape), param);
}
using crucible::testing::op;

/// matmul, bias, scale, row_sum: offers sum_through_affine and gemm_rowsum_to_gemv.
inline task_spec gemm_row_sum_task() {
  task_spec t;
  t.name = "gemm_bias_scale_row_sum";
  t.family = "gemm";
  t.inputs = {tensor("x", {16, 32}), tensor("W", {32, 32}, true), tensor("b", {32}, true)};
  t.ops = {op("matmul", {"W"}), op("add", {"b"}), op("mul_scalar", {}, {{"s", 0.5}}), op("row_sum")};
  return t;
}

inline task_spec softmax_task() {
  task_spec t;
  t.name = "softmax_scaled";
  t.family = "softmax";
  t.inputs = {tensor("x", {64, 128})};
  t.ops = {op("mul_scalar", {}, {{"s", 0.125}}), op("softmax")};
  return t;
}

/// Elementwise chain with a redundant relu and foldable scalars.
inline task_spec elementwise_task() {
  task_spec t;
  t.name = "bias_gelu_scale";
  t.family = "elementwise";
  t.inputs = {tensor("x", {256, 64}), tensor("b", {64}, true)};
  t.ops = {
      op("add", {"b"}), op("gelu"), op("mul_scalar", {}, {{"s", 2.0}}), op("add_scalar", {}, {{"s", 1.0}}),
      op("exp"),        op("relu")};
  return t;
}

inline task_spec row_max_task() {
  task_spec t;
  t.name = "row_max_softplus";
  t.family = "reduction";
  t.inputs = {tensor("x", {32, 256})};
  t.ops = {op("softplus"), op("row_max")};
  return t;
}

inline task_spec layer_norm_task() {
  task_spec t;
  t.name = "layer_norm_silu";
  t.family = "norm";
  t.inputs = {tensor("x", {32, 64}), tensor("w", {64}, true), tensor("b", {64}, true)};
  t.ops = {op("layer_norm", {"w", "b"}), op("silu")};
  return t;
}

inline std::vector<task_spec> all_tasks() {
  return {gemm_row_sum_task(), softmax_task(), elementwise_task(), row_max_task(), layer_norm_task()};
}

inline prompt make_prompt(const task_spec& t, std::vector<exemplar> exemplars = {}, int32_t group_size = 8) {
  prompt p;
  p.group_id = t.name + "-g";
  p.task = t;
  p.exemplars = std::move(exemplars);
  p.group_size = group_size;
  return p;
}

}  // namespace crucible::policies::testing
