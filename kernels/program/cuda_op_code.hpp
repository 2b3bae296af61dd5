#pragma once
// Device code for the elementwise ops of a rewritten chain, as the CUDA group emitters inline them into
// their kernels, and the prelude every emitted .cu starts with. Side inputs are kernel parameters named
// t<input index> (cuda_side_params / cuda_side_args); a side input is read at the broadcast of the
// element's flat index in the running tensor (numpy rules: same shape, a [C] row vector, [C,1,1], a scalar).
// Group emitters that pass their core op's own operands (weights, biases) name them otherwise (w_, b_, ...)
// so the parameter lists never collide.
#include <string>

#include "kernels/program/cuda_groups.hpp"

namespace crucible::kernels {

/// The expression applying chain op `op` (elementwise) to float `v`, where `idx` is the element's flat
/// index in the running tensor of shape `running_shape` (an integer expression of any width), under the
/// group's math knob.
std::string cuda_elementwise_expr(const cuda_group_ctx& g, const chain_op& op, const std::string& v,
                                  const std::string& idx, const shape_t& running_shape);

/// Statements "v = <expr>;" applying ops [first, last] (all elementwise) of the chain in order, one a line.
/// Empty when first > last.
std::string cuda_ew_statements(const cuda_group_ctx& g, int first, int last, const std::string& v,
                               const std::string& idx);

/// ", const float* __restrict__ t<k>" for every side input the elementwise ops of [first, last] read
/// (each once, in input order); "" when none. Append to a kernel's parameter list.
std::string cuda_side_params(const cuda_group_ctx& g, int first, int last);
/// ", X[<k>]" for the same inputs in the same order: append to the launch's argument list.
std::string cuda_side_args(const cuda_group_ctx& g, int first, int last);

/// Whether some op of [first, last] evaluates a transcendental function (where math=fast can matter).
bool cuda_uses_transcendental(const rewritten_chain& chain, int first, int last);

/// A float literal for device code, exact for every float ("(float)(0.5)").
std::string cuda_float(double x);

/// "if (cudaGetLastError() != cudaSuccess) return 5;\n": after each launch in a host function.
std::string cuda_check_launch();

/// Blocks for a grid-stride loop over n items with `threads` per block (at least 1, at most 65535 * 16).
int64_t cuda_blocks(int64_t n, int threads);

/// The prelude (after the #includes): device helpers every group may use.
///   cru_warp_sum/max/min(float)        butterfly over the full warp (all 32 lanes must call)
///   cru_block_sum/max/min(float, sh)   block-wide, every thread gets the result; blockDim.x a multiple of
///                                       32 up to 1024; sh: __shared__ float[32]; safe to call back to back
///   cru_online_merge(m, s, m2, s2)     merges (max, sum of exp(x - max)) pairs; -inf maxima handled
///   cru_warp_online / cru_block_online the same over a warp / block (sh: __shared__ float[64])
///   cru_exp/cru_log/cru_tanh/cru_erf  accurate (expf, ...) ; cru_fexp/cru_flog/cru_ftanh fast variants
const std::string& cuda_prelude();

}  // namespace crucible::kernels
