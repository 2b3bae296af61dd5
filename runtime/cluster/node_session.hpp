#pragma once
// A node of the cluster (`crucible node --join tcp://HEAD:PORT`): it runs pipeline-stage actors of its own
// (compilers, benchmarkers on its devices, verifiers, plugin stages), joins the head over ZeroMQ
// (runtime/cluster/wire_peer: registration, heartbeats, credits, CURVE) and serves the work the head sends
// with them. It pulls work only as its actors free up (credits), survives the head going away (it reconnects
// with backoff and registers again, e.g. after `crucible train --resume`), and restarts an actor of its
// own that dies. It runs until SIGINT/SIGTERM or request_node_stop(), then drains: what it holds is
// finished and answered before it leaves.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/config/run_context.hpp"
#include "runtime/hosting/role_registry.hpp"

namespace crucible::runtime {

struct node_options {
  std::string join;                      ///< the head's endpoint
  std::map<std::string, int64_t> roles;  ///< role -> actors (each a unit of capacity the head can use)
  std::vector<int64_t> devices;          ///< benchmarker devices (CUDA target); empty: cuda.devices
  std::string node_id;                   ///< empty: host name and pid
};

struct node_summary {
  int64_t served = 0;         ///< work items answered
  int64_t failed = 0;         ///< answered with an error
  int64_t registrations = 0;  ///< sessions the head accepted (more than 1 after a head restart)
};

/// The node's options from config (cluster.join, cluster.node_roles, cluster.node_devices) and the CLI
/// (`--join`, `--roles compiler,benchmarker` or `compiler=2,benchmarker=1`, `--devices 0,1`), checked:
/// errors name the flag or key.
expected<node_options> resolve_node_options(const config& cfg, const std::string& join,
                                            const std::string& roles, const std::string& devices,
                                            const std::string& node_id);

/// Runs the node until stopped. Errors: no head endpoint, a role the registry does not know, unusable
/// CURVE key files.
expected<node_summary> run_node(std::shared_ptr<const run_context> run,
                                std::shared_ptr<const role_registry> registry, const node_options& options);

/// Asks a running run_node to drain and return (tests, signal handlers).
void request_node_stop();

}  // namespace crucible::runtime
