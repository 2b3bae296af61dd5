#pragma once
// The chain a program's groups cut: the task's op chain after the program's rewrites. Rewrites may introduce
// derived ops that no task names (they start with '_'), and may move ops; everything downstream of the
// rewrites (fusion legality, strategies, emitters) works on this form, never on the task's ops directly.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/task/chain_shapes.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// v * a + b: what fold_scalars makes of a run of mul_scalar/add_scalar (attrs a, b).
inline constexpr std::string_view affine_op = "_affine";
/// The row sum (attrs.mean = 1: the mean) of matmul(W) followed by linear ops, computed as a GEMV:
/// args[0] = W, `linear` = the row-vector/scalar ops between the matmul and the reduction (in order).
inline constexpr std::string_view matmul_rowsum_op = "_matmul_rowsum";

/// What an op of the rewritten chain is, for grouping and emission. The kinds after gemv are the CUDA
/// target's op classes (op_catalog's dim_reduce, scan, conv, pool, channel_norm, loss, bmm, attention).
enum class chain_op_kind {
  elementwise,
  row_reduce,
  row_norm,
  gemm,
  gemv,
  dim_reduce,
  scan,
  conv,
  pool,
  channel_norm,
  loss,
  bmm,
  attention
};

struct chain_op {
  std::string op;
  std::vector<std::string> args;
  std::map<std::string, double> attrs;
  std::vector<op_spec> linear;  ///< matmul_rowsum_op only
  /// The op's output shape as the task infers it. Rewrites never move ops across the CUDA-only kinds
  /// (they only move and drop elementwise ops next to row ops), so those keep this shape.
  shape_t task_out = {};
};

struct rewritten_chain {
  std::vector<chain_op> ops;
  shape_t input;               ///< shape of inputs[0]
  std::vector<shape_t> after;  ///< running shape after each op
  const shape_t& before(size_t i) const { return i == 0 ? input : after[i - 1]; }
};

/// The task's chain, unrewritten. Errors if the task does not validate, is not all-float32 (the only dtype
/// the emitters write), or uses an op the target ("cpu" | "cuda") has no emitter for: the CPU target
/// takes the original op classes, with binary side inputs of the running shape or a last-dim row vector.
expected<rewritten_chain> chain_of_task(const task_spec& task, std::string_view target = "cpu");

/// Whether the CPU emitter writes op `name` (the original catalogue: unary, scalar, binary, row and gemm
/// ops up to matmul).
bool cpu_emits_op(std::string_view name);

/// Recomputes `after` from `ops` (rewrites call this after changing the ops).
void recompute_shapes(rewritten_chain& chain, const task_spec& task);

chain_op_kind kind_of(const chain_op& op);
inline bool is_elementwise(const chain_op& op) {
  return kind_of(op) == chain_op_kind::elementwise;
}

/// The op's attribute, or the catalogue default (derived ops: 0 when absent).
double attr_of(const chain_op& op, std::string_view name);

/// Whether the op evaluates exp/tanh/erf/log1p per element, i.e. whether math=poly can change its code.
bool uses_transcendental(const chain_op& op);

/// Shape of the task input called `name` (empty if none).
shape_t input_shape(const task_spec& task, const std::string& name);

}  // namespace crucible::kernels
