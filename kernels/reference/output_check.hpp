#pragma once
// Compares a candidate's output with the reference's: allclose with per-dtype tolerances, plus what the
// verifier needs to tell a wrong answer from a hack (unwritten elements still holding the poison pattern).
#include <cstdint>
#include <string>

#include "kernels/abi/host_tensor.hpp"

namespace crucible::kernels {

struct output_comparison {
  bool ok = false;           ///< |got - want| <= atol + rtol * |want| everywhere, and same non-finites
  double max_abs_err = 0.0;  ///< over elements where both sides are finite; inf if a non-finite mismatched
  double max_rel_err = 0.0;  ///< |got - want| / |want| over finite elements with want != 0
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;
  int64_t poisoned = 0;  ///< elements still holding the poison pattern (never written)
  int64_t numel = 0;     ///< elements compared
  std::string error;     ///< set when the two cannot be compared at all (dtype or shape differ)
  std::string summary() const;
};

/// Fills `t` with a NaN bit pattern no arithmetic produces, so unwritten elements are recognisable.
/// One pattern per element width: 0x7ff80000deaddead (8 bytes), 0x7fc0dead (4: a quiet NaN whose payload
/// float arithmetic never creates; NaNs computed from numbers carry the default payload), 0x7fda (2: a
/// quiet NaN in both float16 and bfloat16), 0xa5 (1: not a valid bool). Integer outputs get the same bytes,
/// which are valid integers there, so a poisoned count on an integer output is a strong hint, not proof.
void poison(host_tensor& t);
/// The same on `n` elements of `dtype` at `data` (a buffer the worker shares with a candidate process).
void poison(void* data, const std::string& dtype, int64_t n);

/// A poison drawn afresh for every call: element i holds bits hashed from (seed, i), mostly finite values, so
/// no pattern tells a candidate which calls are which, and the worker, knowing the seed, recognises unwritten
/// elements. A computed value equals its element's poison by chance now and then: see poisoned_beyond_chance.
void poison_random(void* data, const std::string& dtype, int64_t n, uint64_t seed);
/// Elements of `t` still holding poison_random(seed)'s bits.
int64_t count_poisoned_random(const host_tensor& t, uint64_t seed);
/// More poisoned elements than computed values match by chance (a few per million elements at most).
bool poisoned_beyond_chance(int64_t poisoned, int64_t numel);

/// Number of elements of `t` still holding the poison pattern.
int64_t count_poisoned(const host_tensor& t);

/// Element-wise allclose of `got` against the reference `want` (same dtype and shape). NaN in `want`
/// accepts NaN in `got`; infinities must match in sign; a poisoned element is always a mismatch (it was
/// never written, even where `want` is NaN).
output_comparison compare_outputs(const host_tensor& got, const host_tensor& want, double atol, double rtol);

/// Byte equality (inputs unchanged; outputs unchanged after the call returned).
bool same_bytes(const host_tensor& a, const host_tensor& b);

}  // namespace crucible::kernels
