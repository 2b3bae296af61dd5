#pragma once
// The head's side of the cluster. It listens on cluster.listen (runtime/cluster/wire_head: registration,
// heartbeats, credits, CURVE) and makes every registered peer's pipeline roles members of the supervisor's
// pools: a peer offering `benchmarker` with capacity 2 becomes two benchmarker members, proxies that carry
// the conductor's requests to it as work items (runtime/cluster/stage_codec) and its answers back. A peer
// that leaves or goes silent takes its members out of the pools and fails what it had in flight or queued, so
// the conductor re-dispatches it: no candidate is lost. Work for a peer waits at the head until the peer
// grants credit (it pulls work when idle). The gateway also answers operators' control commands
// (`crucible status`, `crucible scale`) sent to the same endpoint.
//
// Messages: (status_atom) -> status_report (the run's, with nodes); (stop_atom) ends the listener and fails
// whatever is outstanding.
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "messages/expected.hpp"
#include "runtime/config/run_context.hpp"

namespace crucible::runtime {

struct gateway_handle {
  caf::actor actor;
  std::string endpoint;    ///< the bound endpoint, e.g. tcp://0.0.0.0:5555
  std::string public_key;  ///< the head's CURVE public key (empty without CURVE)
  std::string note;        ///< why the endpoint differs from cluster.listen (listen_policy), said at start
};

/// Binds cluster.listen (CURVE when cluster.secret_key is set: cluster.authorized_keys lists the nodes'
/// public keys) and spawns the gateway. Errors: an unusable endpoint or key file.
expected<gateway_handle> spawn_cluster_gateway(caf::actor_system& sys, std::shared_ptr<const run_context> run,
                                               caf::actor supervisor);

}  // namespace crucible::runtime
