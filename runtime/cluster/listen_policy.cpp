#include "runtime/cluster/listen_policy.hpp"

namespace crucible::runtime {

bool loopback_host(const std::string& h) {
  return h == "localhost" || h == "[::1]" || h == "::1" || h.rfind("127.", 0) == 0 ||
         h.rfind("::ffff:127.", 0) == 0;
}

namespace {

bool wildcard_host(const std::string& h) {
  return h == "*" || h == "0.0.0.0" || h == "[::]" || h == "::";
}

}  // namespace

expected<listen_plan> plan_listen(const cluster_section& cluster) {
  listen_plan plan{cluster.listen, ""};
  const std::string tcp = "tcp://";
  // Keys authenticate every peer; plaintext_remote is the operator's choice; ipc:// and inproc:// are local.
  if (!cluster.secret_key.empty() || cluster.plaintext_remote || cluster.listen.rfind(tcp, 0) != 0)
    return plan;
  const std::string rest = cluster.listen.substr(tcp.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return plan;  // ZeroMQ's own error says what is wrong
  const std::string host = rest.substr(0, colon), port = rest.substr(colon);
  if (loopback_host(host)) return plan;
  if (wildcard_host(host)) {
    plan.endpoint = tcp + "127.0.0.1" + port;
    plan.note = "cluster: no CURVE keys, so listening on loopback only (" + plan.endpoint + " for " +
                cluster.listen +
                "): nodes of other hosts cannot join. Set cluster.secret_key and cluster.authorized_keys "
                "(crucible keygen) to admit them, or cluster.plaintext_remote: true to accept anyone who "
                "reaches the port";
    return plan;
  }
  return make_error("cluster.listen '" + cluster.listen +
                    "' admits other hosts, and without CURVE keys anyone who reaches it could join, serve "
                    "stages and scale the run: set cluster.secret_key and cluster.authorized_keys (crucible "
                    "keygen), or cluster.plaintext_remote: true");
}

}  // namespace crucible::runtime
