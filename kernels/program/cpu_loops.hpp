#pragma once
// Loop shapes the CPU group emitters share: element loops (plain, unrolled, `omp simd`, simd in unrolled
// blocks) and reductions with partial accumulators. Partial accumulators are how a reduction vectorizes
// without -ffast-math: the compiler may not reassociate one running sum, but `acc` independent lanes
// updated in an `omp simd` inner loop map onto vector registers, and their order is fixed, so the result
// is deterministic.
#include <string>
#include <utility>
#include <vector>

namespace crucible::kernels {

/// `for (int64_t var = begin; var < end; ++var) { body }`, as:
///   simd=false, unroll=1: a plain loop (the compiler's own choice of vectorization);
///   simd=false, unroll>1: the same under `#pragma GCC unroll`;
///   simd=true,  unroll=1: under `#pragma omp simd`;
///   simd=true,  unroll>1: blocks of 8*unroll elements, each an `omp simd` loop of constant trip count
///                         (unrolled vector code), then an `omp simd` tail.
std::string cpu_loop(bool simd, int unroll, const std::string& var, const std::string& begin,
                     const std::string& end, const std::string& body);

/// A reduction over `var` in [0, len): `body` defines `float v` for one element (it may also store);
/// `update` folds v into the accumulators, naming each as `$name`; `combine` folds lane `$name@` into the
/// totals `$name` (only used when acc > 1). After the code, each accumulator is a float named `name`.
struct cpu_reduction {
  std::vector<std::pair<std::string, std::string>> accs;  ///< name, initial value
  std::string update;
  std::string combine;
};
std::string cpu_reduce(const cpu_reduction& r, int acc, const std::string& var, const std::string& len,
                       const std::string& body);

/// The usual ones: a sum and a max of v into `name`.
cpu_reduction sum_reduction(const std::string& name);
cpu_reduction max_reduction(const std::string& name);

/// Replaces every `from` in `s` by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

}  // namespace crucible::kernels
