#include "kernels/verify/verdict_vocabulary.hpp"

#include <utility>

namespace crucible::kernels {

namespace {

const std::pair<outcome, const char*> outcome_names[] = {
    {outcome::pass, "pass"},   {outcome::incorrect, "incorrect"}, {outcome::compile_error, "compile_error"},
    {outcome::crash, "crash"}, {outcome::timeout, "timeout"},     {outcome::hack, "hack"},
    {outcome::error, "error"}, {outcome::abandoned, "abandoned"}, {outcome::format, "format"},
};

const std::pair<evidence_kind, const char*> evidence_names[] = {
    {evidence_kind::input_mutated, "input_mutated"},
    {evidence_kind::output_unwritten, "output_unwritten"},
    {evidence_kind::output_changed_after_return, "output_changed_after_return"},
    {evidence_kind::threads_left_running, "threads_left_running"},
    {evidence_kind::timed_output_mismatch, "timed_output_mismatch"},
    {evidence_kind::post_timing_mismatch, "post_timing_mismatch"},
    {evidence_kind::input_independent, "input_independent"},
    {evidence_kind::result_cache, "result_cache"},
    {evidence_kind::below_roofline, "below_roofline"},
    {evidence_kind::sandbox_violation, "sandbox_violation"},
    {evidence_kind::process_probe, "process_probe"},
    {evidence_kind::work_outside_calls, "work_outside_calls"},
    {evidence_kind::load_time_threads, "load_time_threads"},
    {evidence_kind::load_time_processes, "load_time_processes"},
    {evidence_kind::work_outside_stream, "work_outside_stream"},
    {evidence_kind::work_before_call, "work_before_call"},
    {evidence_kind::wall_time_mismatch, "wall_time_mismatch"},
    {evidence_kind::device_state_changed, "device_state_changed"},
    {evidence_kind::reference_library_call, "reference_library_call"},
    {evidence_kind::reference_changed, "reference_changed"},
    {evidence_kind::output_disguised, "output_disguised"},
};

const std::pair<review_finding, const char*> finding_names[] = {
    {review_finding::upheld, "upheld"},
    {review_finding::hack, "hack"},
    {review_finding::inconclusive, "inconclusive"},
};

// Every enum of the vocabulary looks its names up in its table the same way.
template <class E, size_t N>
const char* name_in(const std::pair<E, const char*> (&table)[N], E value, const char* fallback) {
  for (const auto& [k, n] : table)
    if (k == value) return n;
  return fallback;
}

template <class E, size_t N>
std::optional<E> value_in(const std::pair<E, const char*> (&table)[N], std::string_view name) {
  for (const auto& [k, n] : table)
    if (name == n) return k;
  return std::nullopt;
}

}  // namespace

const char* wire_name(outcome o) {
  return name_in(outcome_names, o, "error");
}

std::optional<outcome> parse_outcome(std::string_view name) {
  return value_in(outcome_names, name);
}

bool has_outcome(const verdict& v, outcome o) {
  return parse_outcome(v.outcome) == o;
}

const char* wire_name(evidence_kind k) {
  return name_in(evidence_names, k, "unknown");
}

std::optional<evidence_kind> parse_evidence(std::string_view tag) {
  return value_in(evidence_names, tag.substr(0, tag.find(':')));
}

std::string evidence_tag(evidence_kind k, const std::string& detail) {
  std::string tag = wire_name(k);
  if (!detail.empty()) tag += ":" + detail;
  return tag;
}

const char* wire_name(review_finding f) {
  return name_in(finding_names, f, "inconclusive");
}

std::optional<review_finding> parse_review_finding(std::string_view name) {
  return value_in(finding_names, name);
}

verdict pipeline_error_verdict(const std::string& candidate_id, const std::string& content_hash,
                               const std::string& why) {
  verdict v;
  v.candidate_id = candidate_id;
  v.content_hash = content_hash;
  v.outcome = wire_name(outcome::error);
  v.evidence.push_back("pipeline: " + why);
  v.reward = 0.0;
  return v;
}

verdict abandoned_verdict(const std::string& candidate_id, const std::string& content_hash,
                          const std::string& stage) {
  verdict v;
  v.candidate_id = candidate_id;
  v.content_hash = content_hash;
  v.outcome = wire_name(outcome::abandoned);
  v.evidence = {"run stopped during stage " + stage};
  v.reward = 0.0;
  return v;
}

verdict format_verdict(const std::string& candidate_id, const std::string& content_hash,
                       const std::string& why) {
  verdict v;
  v.candidate_id = candidate_id;
  v.content_hash = content_hash;
  v.outcome = wire_name(outcome::format);
  v.evidence = {"format: " + why};
  v.reward = 0.0;
  return v;
}

}  // namespace crucible::kernels
