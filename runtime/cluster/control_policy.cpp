#include "runtime/cluster/control_policy.hpp"

#include "runtime/cluster/listen_policy.hpp"

namespace crucible::runtime {

bool local_address(const std::string& a) {
  return a.empty() || loopback_host(a);
}

std::string control_refusal(const control& c, const control_origin& from) {
  if (c.command != "scale" || local_address(from.address)) return {};
  if (from.public_key.empty())
    return "scale from " + from.address +
           " refused: commands that change the run come from this host or from a client with a CURVE key "
           "(cluster.secret_key and authorized_keys)";
  const bool drains_a_node = c.args.count("node") && !c.args.at("node").empty();
  if (c.count == 0 && !drains_a_node)
    return "scale from " + from.address + " refused: a client of another host cannot take the head's own '" +
           c.role + "' to 0 (drain a node with --node, or scale from the head's host)";
  return {};
}

}  // namespace crucible::runtime
