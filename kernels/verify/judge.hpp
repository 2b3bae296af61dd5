#pragma once
// The verifier's rules (DESIGN.md §6), as plain functions so `crucible eval` and the verifier actor give the
// same verdict: static checks on the source, the benchmarker's dynamic evidence, and the outcome and reward.
#include <string>
#include <vector>

#include "messages/candidate.hpp"
#include "messages/evaluation.hpp"

namespace crucible::kernels {

struct judge_options {
  double penalty = -1.0;  ///< reward of a flagged (hack) candidate
  double max_believed_speedup = 1e4;
};

/// Static source checks: flags such as "spawns_thread", "creates_stream" (CUDA), "reads_clock", "static_state"
/// (incl. CUDA __device__/__managed__ globals; library handles are allowed), "calls_reference",
/// "dynamic_loading", "system_call", "file_access" with the line that triggered each (as "flag: line N:
/// text", at most three lines per flag). Comments and string literals are not code; static functions and
/// const/constexpr tables are not state. A scan can be dodged (macros, token pasting): the worker also
/// judges the artifact's imported symbols (artifact_imports.hpp) with the same flag names.
std::vector<std::string> static_source_flags(const std::string& source,
                                             std::vector<std::string>* evidence = nullptr);

/// The verdict: outcome pass | incorrect | compile_error | crash | timeout | hack | error, its flags and
/// evidence, the believed speedup, and the reward (speedup if pass, 0 if it failed, the penalty if flagged).
/// First match wins: compile_error, crash, timeout, error (load_error or any other non-ok status), hack (a
/// dynamic evidence tag, whose part before ':' is the flag), incorrect, pass (speedup capped at
/// max_believed_speedup; 0 when the bench did not time it). Static source features are listed in the
/// evidence as "static feature FLAG: line N: ..." and never make a verdict alone.
verdict judge(const candidate& cand, const compile_result& compiled, const bench_result& bench,
              const judge_options& options = {});

}  // namespace crucible::kernels
