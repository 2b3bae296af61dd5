#include "runtime/pipeline/pipeline_stages.hpp"

#include <algorithm>

namespace crucible::runtime {

namespace {

// The stages Crucible itself serves; the first three are the built-in pipeline, in order.
const std::vector<stage_info>& table() {
  static const std::vector<stage_info> stages = {
      {"compile", "compiler", stage_slot::compiled, false, true},
      {"benchmark", "benchmarker", stage_slot::bench, false, true},
      {"verify", "verifier", stage_slot::judged, true, true},
      {"judge", "judge", stage_slot::whole, true, false},
  };
  return stages;
}

}  // namespace

stage_info stage_info_of(const std::string& stage) {
  for (const auto& s : table())
    if (s.stage == stage) return s;
  return stage_info{stage, stage, stage_slot::whole, false, false};
}

std::string role_of_stage(const std::string& stage) {
  return stage_info_of(stage).role;
}

std::string stage_of_role(const std::string& role) {
  for (const auto& s : table())
    if (s.role == role) return s.stage;
  return role;
}

bool is_builtin_stage(const std::string& stage) {
  return stage_info_of(stage).builtin;
}

const std::vector<std::string>& builtin_stages() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& s : table())
      if (s.builtin) v.push_back(s.stage);
    return v;
  }();
  return names;
}

const std::vector<std::string>& head_roles() {
  static const std::vector<std::string> roles = {"conductor", "generator", "replay_buffer", "learner"};
  return roles;
}

bool is_head_role(const std::string& role) {
  const auto& h = head_roles();
  return std::find(h.begin(), h.end(), role) != h.end();
}

bool is_singleton_role(const std::string& role) {
  return is_head_role(role) && role != "generator";
}

std::string node_refusal(const std::string& role) {
  if (is_head_role(role)) return " runs on the head; a node serves pipeline stages";
  if (stage_info_of(stage_of_role(role)).head_only)
    return " gives verdicts, which are made on the head; a node serves compile, benchmark and custom stages";
  return {};
}

status take_stage_answer(const std::string& stage, scored_candidate& s, scored_candidate answer) {
  if (answer.cand.id != s.cand.id)
    return make_error("stage " + stage + " answered about candidate '" + answer.cand.id + "', asked about '" +
                      s.cand.id + "'");
  switch (stage_info_of(stage).slot) {
    case stage_slot::compiled:
      s.compiled = std::move(answer.compiled);
      break;
    case stage_slot::bench:
      s.bench = std::move(answer.bench);
      break;
    case stage_slot::judged:
      s.judged = std::move(answer.judged);
      break;
    case stage_slot::whole: {
      candidate kept = std::move(s.cand);  // a stage amends the scoring, never the candidate
      s = std::move(answer);
      s.cand = std::move(kept);
      break;
    }
  }
  return {};
}

}  // namespace crucible::runtime
