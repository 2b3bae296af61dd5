#pragma once
// Where a head listens. Without CURVE keys anyone who reaches the port can register as a node, serve
// stages and send control commands, so a head without keys listens on loopback only unless the config says
// otherwise (cluster.plaintext_remote): a wildcard endpoint narrows to 127.0.0.1, and an address of another
// interface is an error naming the two ways out. With keys, or plaintext_remote, the endpoint is as written.
#include <string>

#include "messages/expected.hpp"
#include "runtime/config/config.hpp"

namespace crucible::runtime {

struct listen_plan {
  std::string endpoint;  ///< what to bind
  std::string note;      ///< said at start when the endpoint was narrowed (empty otherwise)
};

/// Whether a host name or address is this host's loopback (localhost, 127.x.x.x, ::1, ::ffff:127.x.x.x).
bool loopback_host(const std::string& host);

/// For a non-empty cluster.listen.
expected<listen_plan> plan_listen(const cluster_section& cluster);

}  // namespace crucible::runtime
