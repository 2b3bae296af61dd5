#pragma once
// Compares a candidate's output with the reference's: allclose with per-dtype tolerances, plus what the
// verifier needs to tell a wrong answer from a hack (unwritten elements still holding the poison pattern).
#include <cstdint>
#include <string>

#include "kernels/abi/host_tensor.hpp"

namespace crucible::kernels {

struct output_comparison {
  bool ok = false;           ///< |got - want| <= atol + rtol * |want| everywhere, and same non-finites
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;
  int64_t poisoned = 0;      ///< elements still holding the poison pattern (never written)
  std::string summary() const;
};

/// Fills `t` with a NaN bit pattern no arithmetic produces, so unwritten elements are recognisable.
void poison(host_tensor& t);

/// Number of elements of `t` still holding the poison pattern.
int64_t count_poisoned(const host_tensor& t);

output_comparison compare_outputs(const host_tensor& got, const host_tensor& want, double atol, double rtol);

/// Byte equality (inputs unchanged; outputs unchanged after the call returned).
bool same_bytes(const host_tensor& a, const host_tensor& b);

}  // namespace crucible::kernels
