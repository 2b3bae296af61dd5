#pragma once
// The verifier's rules (DESIGN.md §6), as plain functions so `crucible eval` and the verifier actor give the
// same verdict: static checks on the source, the benchmarker's dynamic evidence, and the outcome and reward.
#include <string>
#include <vector>

#include "messages/candidate.hpp"
#include "messages/evaluation.hpp"

namespace crucible::kernels {

struct judge_options {
  double penalty = -1.0;          ///< reward of a flagged (hack) candidate
  double max_believed_speedup = 1e4;
};

/// Static source checks: flags such as "spawns_thread", "reads_clock", "static_state", "calls_reference",
/// "dynamic_loading", "system_call" with the line that triggered each (as "flag: line N: text").
std::vector<std::string> static_source_flags(const std::string& source, std::vector<std::string>* evidence = nullptr);

/// The verdict: outcome pass | incorrect | compile_error | crash | timeout | hack | error, its flags and
/// evidence, the believed speedup, and the reward (speedup if pass, 0 if it failed, the penalty if flagged).
verdict judge(const candidate& cand, const compile_result& compiled, const bench_result& bench,
              const judge_options& options = {});

}  // namespace crucible::kernels
