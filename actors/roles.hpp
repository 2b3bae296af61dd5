#pragma once
// The built-in actor roles. Each role's spawn function is its registry factory; register_builtin_roles
// adds them all under their role names (conductor, generator, compiler, benchmarker, verifier,
// replay_buffer, learner, judge). Message protocols are documented beside each spawn function.
#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/hosting/role_registry.hpp"

namespace crucible::actors {

/// (generate_atom, prompt) -> vector<candidate>: G programs sampled by the policy and emitted as source.
/// weights_update: swaps in newer weights between samples. Detached (policy inference blocks).
caf::actor spawn_generator(caf::actor_system& sys, const runtime::role_context& ctx);

// The stage roles (compiler, benchmarker, verifier, judge) answer the one stage message,
// (stage_atom, stage_request) -> scored_candidate, filling their slot (runtime/pipeline/pipeline_stages).

/// compile: compile_result through the sandboxed, content-hash-cached compiler.
caf::actor spawn_compiler(caf::actor_system& sys, const runtime::role_context& ctx);

/// benchmark: bench_result from an isolated worker process that it restarts when a candidate kills it
/// (stage_request::best_seen sets the re-measurement bar); also (pid_atom) -> int32_t worker pid (0 if none).
caf::actor spawn_benchmarker(caf::actor_system& sys, const runtime::role_context& ctx);

/// verify: the verdict, from the candidate, its compile result and its benchmark.
caf::actor spawn_verifier(caf::actor_system& sys, const runtime::role_context& ctx);

/// judge, the optional second look: learns confirmed hacks from the verifier's verdicts and reviews passing
/// outliers against them (judged.review).
caf::actor spawn_judge(caf::actor_system& sys, const runtime::role_context& ctx);

/// (insert_atom, scored_group) -> int64_t newly stored; (record_atom, scored_group with stages) -> int64_t
/// members recorded in flight; (restore_atom) -> group_batch of the groups in flight, with the run's bests;
/// (exemplar_atom, prompt) -> prompt with exemplars;
/// (groups_atom, int64_t learner_version, int32_t n) -> group_batch; (status_atom) -> status_report.
caf::actor spawn_replay_buffer(caf::actor_system& sys, const runtime::role_context& ctx);

/// Trains on groups from the replay buffer, publishes weights to generators, writes metrics and
/// checkpoints; (checkpoint_atom) -> int64_t step checkpointed; (status_atom) -> status_report.
caf::actor spawn_learner(caf::actor_system& sys, const runtime::role_context& ctx);

/// Drives groups through the pipeline (runtime/pipeline/pipeline_ledger decides, the replay buffer records
/// each candidate from generation on, and groups left in flight by an earlier process are resumed first);
/// (stop_atom, double grace_s) -> status_report once drained;
/// (status_atom) -> status_report.
caf::actor spawn_conductor(caf::actor_system& sys, const runtime::role_context& ctx);

void register_builtin_roles(runtime::role_registry& registry);

}  // namespace crucible::actors
