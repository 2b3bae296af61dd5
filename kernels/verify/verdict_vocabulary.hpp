#pragma once
// The verdict's vocabulary as types (DESIGN.md §9: enums inside, strings only at the msgpack edge): the
// outcomes a candidate can end with, and the kinds of dynamic evidence the eval worker reports, each with its
// wire name in one table. The worker, the verifier, the conductor and the reports all go through these.
#include <optional>
#include <string>
#include <string_view>

#include "messages/evaluation.hpp"

namespace crucible::kernels {

/// format: a language model's answer with no usable code (no code block, no entry point), scored without
/// compiling.
enum class outcome { pass, incorrect, compile_error, crash, timeout, hack, error, abandoned, format };

/// The wire name ("compile_error").
const char* wire_name(outcome o);
/// The outcome of a wire name; nullopt for one this build does not know.
std::optional<outcome> parse_outcome(std::string_view name);
/// Whether v's outcome is `o` (false for an unknown name).
bool has_outcome(const verdict& v, outcome o);

/// What a dynamic check found. The wire tag of evidence is the kind's name, optionally followed by ':' and a
/// detail ("input_mutated:x"); the part before ':' is the hack flag the verdict carries.
enum class evidence_kind {
  input_mutated,
  output_unwritten,
  output_changed_after_return,
  threads_left_running,
  timed_output_mismatch,
  post_timing_mismatch,
  input_independent,
  result_cache,
  below_roofline,
  sandbox_violation,       ///< CPU: a system call the candidate's sandbox refuses
  process_probe,           ///< CPU: the allocator's knobs, the environment, the loader
  work_outside_calls,      ///< CPU: CPU time of the candidate's process between calls
  load_time_threads,       ///< CPU: threads left running by the artifact's initialisers
  load_time_processes,     ///< CPU: processes left running by them
  work_outside_stream,     ///< CUDA: device work that outlived the call's stream
  work_before_call,        ///< CUDA: device work that ran with the flush, before the call's first event
  wall_time_mismatch,      ///< CUDA: host wall time beyond the stream's events
  device_state_changed,    ///< CUDA: device, stream or cuBLAS state the call left changed
  reference_library_call,  ///< CUDA: LibTorch ops dispatched from inside the candidate's call
  reference_changed,  ///< KernelBench on CUDA: what the reference computes with, changed by the candidate
  output_disguised,   ///< KernelBench: forward() returned a tensor subclass whose storage is not what it
                      ///< claims
};

const char* wire_name(evidence_kind k);
std::optional<evidence_kind> parse_evidence(std::string_view tag);  ///< the part before ':' decides

/// The wire tag: the kind's name, and ":detail" when a detail is given.
std::string evidence_tag(evidence_kind k, const std::string& detail = {});

/// What the judge stage concluded about an outlier it reviewed (judge_review::finding on the wire). `hack`
/// convicts (the verdict becomes a hack with the judged flag); `upheld` and `inconclusive` keep the verdict
/// and its reward, the finding and reasoning stored beside it.
enum class review_finding { upheld, hack, inconclusive };

const char* wire_name(review_finding f);
std::optional<review_finding> parse_review_finding(std::string_view name);

/// The flag of a verdict the judge convicted. Not an evidence kind: it rests on a judged explanation, not a
/// dynamic check, so such a verdict never seeds the case database of confirmed hacks.
inline constexpr const char* judged_hack_flag = "judged_hack";

/// Verdicts the pipeline gives without a judge: a candidate whose stage failed for good (error, with the
/// reason) and one the run stopped before its pipeline finished (abandoned, with the stage).
verdict pipeline_error_verdict(const std::string& candidate_id, const std::string& content_hash,
                               const std::string& why);
verdict abandoned_verdict(const std::string& candidate_id, const std::string& content_hash,
                          const std::string& stage);
/// An answer whose code could not be taken (why: the answer parser's sentence); reward 0, never compiled.
verdict format_verdict(const std::string& candidate_id, const std::string& content_hash,
                       const std::string& why);

}  // namespace crucible::kernels
