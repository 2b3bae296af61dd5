#pragma once
// Whether a run can start, decided before anything is started or written: `crucible train` checks it before
// it touches the run directory, `--dry-run` reports it, and the supervisor checks it again before it spawns.
#include "messages/expected.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/role_registry.hpp"

namespace crucible::runtime {

/// The roles: every role with a count is known to `registry` (built-in or from a plugin; not checked when
/// null, before plugins are loaded); conductor,
/// generator, replay_buffer and learner are present, the three singletons exactly once. The pipeline: the
/// built-in stages compile, benchmark and verify each once and in that order (each reads what the one before
/// it wrote); every stage served by a role with a count, unless nodes may serve it (cluster.listen is set).
/// A head's endpoint as listen_policy.hpp allows it.
/// The first problem found, as a sentence naming the key.
status check_run_plan(const config& cfg, const role_registry* registry);

}  // namespace crucible::runtime
