#pragma once
// The supervisor owns one pool of actors per role, sized from config (`roles:`). It spawns them through the
// role registry, monitors them, and restarts one that dies abnormally at the same pool slot; subscribers
// (the conductor) hear of every change so in-flight work on a dead actor is re-dispatched. It also relays
// "publications" — the latest weights — to every member of a role, and replays the latest one to a member
// that is (re)started, so a restarted generator never samples with stale weights.
//
// Messages: (pool_atom, role) -> vector<actor>; (pool_atom) subscribes the sender to
// (pool_atom, role, vector<actor>) updates; (publish_atom, role, message); (status_atom) -> status_report
// (roles only); (stop_atom) -> stops every member, then itself.
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/config/run_context.hpp"
#include "runtime/hosting/role_registry.hpp"

namespace crucible::runtime {

/// The order roles start in: the ones others depend on first; the conductor, which drives the others,
/// last. Roles not listed here (plugins) start before the conductor.
const std::vector<std::string>& role_start_order();

/// Spawns the supervisor, which spawns every role with a count > 0. Unknown roles in config are an error
/// reported before anything is spawned.
expected<caf::actor> spawn_supervisor(caf::actor_system& sys, std::shared_ptr<const run_context> run,
                                      std::shared_ptr<const role_registry> registry,
                                      caf::actor observer = {});

}  // namespace crucible::runtime
