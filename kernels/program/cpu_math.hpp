#pragma once
// The math the CPU emitter writes into candidates: with math=libm each transcendental is a <cmath> call;
// with math=poly it is one of these branch-free (so vectorizable) approximations, each within ~4e-7
// relative error of the exact function on the whole float range (tests/kernels/program checks this):
//   cru_exp       Cody-Waite reduction + Cephes' minimax polynomial; 0 below -87.3, +inf above ln(FLT_MAX)
//   cru_tanh      Cephes' odd polynomial below |x| = 0.625, 1 - 2/(e^{2|x|} + 1) above, +-1 beyond 9
//   cru_erf       rational minimax approximation on [-4, 4] (as in Eigen), +-1 beyond
//   cru_log1p01   log(1 + t) for t in [0, 1] (softplus), atanh series with the rounding of 1 + t corrected
//   cru_softplus  max(x, 0) + log1p(exp(-|x|)), linear above 20 as in torch
#include <string>
#include <string_view>

namespace crucible::kernels {

/// The definitions above, as C++ source (needs <cmath>, <cstdint>, <cstring>).
const std::string& cpu_poly_math_source();

/// The expression computing `fn` ("exp", "tanh", "erf", "log1p") of `arg` under math=libm or math=poly.
std::string cpu_math_call(std::string_view fn, const std::string& arg, bool poly);

/// A C++ float expression equal to `x` rounded to float ("(float)(0.5)"); exact for every double.
std::string float_literal(double x);

}  // namespace crucible::kernels
