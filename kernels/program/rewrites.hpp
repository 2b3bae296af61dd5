#pragma once
// The rewrite catalogue: exact algebraic identities (up to float rounding) matched on the chain. Each is one
// no|yes decision, offered in catalogue order when it matches the chain as rewritten so far; "yes" applies
// it to every match at once. The order is part of the policy's vocabulary: append, never reorder.
//
//   drop_redundant       relu/abs after an op whose output is >= 0 (relu, abs, exp, sigmoid, square,
//                        softplus, softmax) or after relu/abs; a pair neg,neg. Removes the op(s).
//   max_through_monotone row_max after a run of non-decreasing ops (relu, sigmoid, tanh, exp, clamp,
//                        softplus, add_scalar, leaky_relu with alpha >= 0, mul_scalar/_affine with a scale
//                        > 0): max(f(v)) == f(max(v)), so the run moves after the reduction and runs on
//                        the [rows] vector instead of the full tensor.
//   sum_through_affine   row_sum/row_mean after a run of mul_scalar/add_scalar/_affine: the run moves after
//                        the reduction (row_sum: each added constant is scaled by the row length).
//   gemm_rowsum_to_gemv  matmul(W), then linear ops (add/sub/mul of a row vector [N], mul_scalar,
//                        add_scalar, _affine), then row_sum/row_mean == x . (W a) + sum(c) where the linear
//                        ops map column j to a_j*z + c_j: a GEMV against W·a (K·N work, computed from the
//                        inputs on every call) instead of a GEMM (M·K·N). CUDA-L1's largest class of wins.
//   fold_scalars         a run of two or more mul_scalar/add_scalar/_affine becomes one _affine (v*a + b).
#include <string>
#include <string_view>
#include <vector>

#include "kernels/program/rewritten_chain.hpp"

namespace crucible::kernels {

struct rewrite_info {
  std::string name;
  std::string summary;
  /// Whether the rewrite changes `chain` (at least one match).
  bool (*matches)(const rewritten_chain& chain, const task_spec& task);
  /// Applies it to every match. Precondition: matches().
  void (*apply)(rewritten_chain& chain, const task_spec& task);
};

/// All rewrites, in decision order.
const std::vector<rewrite_info>& rewrite_catalog();

/// nullptr when unknown.
const rewrite_info* find_rewrite(std::string_view name);

}  // namespace crucible::kernels
