#pragma once
// The built-in actor roles. Each role's spawn function is its registry factory; register_builtin_roles
// adds them all under their role names (conductor, generator, compiler, benchmarker, verifier,
// replay_buffer, learner, judge). Message protocols are documented beside each spawn function.
#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/role_registry.hpp"

namespace crucible::actors {

/// (generate_atom, prompt) -> vector<candidate>: G programs sampled by the policy and emitted as source.
/// weights_update: swaps in newer weights between samples. Detached (policy inference blocks).
caf::actor spawn_generator(caf::actor_system& sys, const runtime::role_context& ctx);

/// (compile_atom, candidate) -> compile_result, through the sandboxed, content-hash-cached compiler.
caf::actor spawn_compiler(caf::actor_system& sys, const runtime::role_context& ctx);

/// (bench_atom, candidate, compile_result, double best_seen) -> bench_result, in an isolated worker
/// process that it restarts when a candidate kills it; (pid_atom) -> int32_t worker pid (0 if none).
caf::actor spawn_benchmarker(caf::actor_system& sys, const runtime::role_context& ctx);

/// (verify_atom, candidate, compile_result, bench_result) -> verdict.
caf::actor spawn_verifier(caf::actor_system& sys, const runtime::role_context& ctx);

/// (stage_atom, scored_candidate) -> scored_candidate: the optional judge stage. Learns confirmed hacks from
/// the verifier's verdicts and reviews passing outliers against them (judged.review).
caf::actor spawn_judge(caf::actor_system& sys, const runtime::role_context& ctx);

/// (insert_atom, scored_group) -> int64_t newly stored; (record_atom, scored_group with stages) -> int64_t
/// members recorded in flight; (restore_atom) -> group_batch of the groups in flight, with the run's bests;
/// (exemplar_atom, prompt) -> prompt with exemplars;
/// (groups_atom, int64_t learner_version, int32_t n) -> group_batch; (status_atom) -> status_report.
caf::actor spawn_replay_buffer(caf::actor_system& sys, const runtime::role_context& ctx);

/// Trains on groups from the replay buffer, publishes weights to generators, writes metrics and
/// checkpoints; (checkpoint_atom) -> int64_t step checkpointed; (status_atom) -> status_report.
caf::actor spawn_learner(caf::actor_system& sys, const runtime::role_context& ctx);

/// Drives groups through the pipeline (runtime/pipeline_ledger decides, the replay buffer records each
/// candidate from generation on, and groups left in flight by an earlier process are resumed first);
/// (stop_atom, double grace_s) -> status_report once drained;
/// (status_atom) -> status_report.
caf::actor spawn_conductor(caf::actor_system& sys, const runtime::role_context& ctx);

void register_builtin_roles(runtime::role_registry& registry);

}  // namespace crucible::actors
