#pragma once
// The one table of pipeline stages: for each stage, the role that serves it, the slot of the candidate its
// answer fills and where it may run; and the roles that drive a run from the head. Every stage's role
// answers the one stage message, (stage_atom, stage_request) -> scored_candidate (messages/stage_request),
// so the conductor, the remote proxy, a node and a plugin dispatch a stage through one branch and this
// table says what to take from the answer. A custom stage (a plugin's, a remote peer's) is served by the
// role of the same name and may amend the whole candidate but its identity.
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/scored.hpp"

namespace crucible::runtime {

/// The part of a scored candidate a stage's answer fills.
enum class stage_slot {
  compiled,  ///< compile: scored_candidate::compiled
  bench,     ///< benchmark: scored_candidate::bench
  judged,    ///< verify: scored_candidate::judged
  whole,     ///< a custom stage or the judge: everything but the candidate itself
};

struct stage_info {
  std::string stage;
  std::string role;
  stage_slot slot = stage_slot::whole;
  /// Gives verdicts (verify, the judge): runs on the head only. A verdict says what a candidate earns; the
  /// head can check a benchmark's times against its speedups but not a verdict against anything, so one
  /// from the wire would be believed as sent.
  bool head_only = false;
  /// compile, benchmark, verify: in every pipeline, in this order (each reads what the one before wrote).
  bool builtin = false;
};

/// The entry of `stage`; a stage not in the table is a custom one: {stage, stage, whole}.
stage_info stage_info_of(const std::string& stage);

/// The role that serves `stage`.
std::string role_of_stage(const std::string& stage);

/// The stage `role` serves.
std::string stage_of_role(const std::string& role);

/// True for compile, benchmark and verify.
bool is_builtin_stage(const std::string& stage);

/// compile, benchmark, verify, in pipeline order.
const std::vector<std::string>& builtin_stages();

/// conductor, generator, replay_buffer, learner: the roles that drive a run. They serve no stage, run on
/// the head only, and are the built-in roles that do not answer the stage message.
const std::vector<std::string>& head_roles();
bool is_head_role(const std::string& role);

/// conductor, replay_buffer, learner: exactly one each (the run's one ledger, database and weights), so
/// they never scale; generators do.
bool is_singleton_role(const std::string& role);

/// Why no node may serve `role` (a head role, or the role of a stage that gives verdicts), as the tail of
/// a sentence that starts with the role's name; empty when a node may serve it.
std::string node_refusal(const std::string& role);

/// Folds the answer of `stage` into `s`, the candidate as scored before it: the stage's slot is taken from
/// `answer`, the rest of `s` kept. Errors: an answer about another candidate.
status take_stage_answer(const std::string& stage, scored_candidate& s, scored_candidate answer);

}  // namespace crucible::runtime
