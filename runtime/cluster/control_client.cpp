#include "runtime/cluster/control_client.hpp"

#include <cstdio>

#include <zmq.hpp>

#include "messages/envelope.hpp"

namespace crucible::runtime {

expected<status_report> send_control(const std::string& endpoint, const control& command,
                                     std::chrono::milliseconds timeout,
                                     const std::optional<curve_client_keys>& curve) {
  try {
    zmq::context_t ctx(1);
    zmq::socket_t sock(ctx, zmq::socket_type::dealer);
    sock.set(zmq::sockopt::linger, 0);
    if (curve) {
      auto server = z85_key_bytes(curve->server_public);
      auto pub = z85_key_bytes(curve->client.public_key);
      auto sec = z85_key_bytes(curve->client.secret_key);
      if (!server || !pub || !sec) return make_error("CURVE keys: not usable");
      sock.set(zmq::sockopt::curve_serverkey, *server);
      sock.set(zmq::sockopt::curve_publickey, *pub);
      sock.set(zmq::sockopt::curve_secretkey, *sec);
    }
    sock.connect(endpoint);
    // A DEALER talks to the ROUTER as a REQ would: an empty delimiter, then the envelope.
    std::string frame = encode(command, "crucible-cli");
    sock.send(zmq::message_t(), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(frame), zmq::send_flags::none);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      zmq::pollitem_t items[] = {{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 1, left);
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      for (;;) {
        zmq::message_t m;
        if (!sock.recv(m, zmq::recv_flags::none)) break;
        bool more = m.more();
        parts.push_back(std::move(m));
        if (!more) break;
      }
      if (parts.empty()) continue;
      const auto& last = parts.back();
      auto env = decode(std::string_view(static_cast<const char*>(last.data()), last.size()));
      if (!env) return make_error("the head's answer: " + env.message());
      if (env->kind == "error") {
        auto e = env->as<wire_error>();
        return make_error("the head refused the command: " + (e ? e->code + ": " + e->message : env->kind));
      }
      auto r = env->as<status_report>();
      if (!r) return make_error("the head's answer: " + r.message());
      if (!r->error.empty()) return make_error(r->error);
      return *r;
    }
    return make_error("no answer from " + endpoint + " within " + std::to_string(timeout.count()) +
                      " ms (no head there, or it did not accept this client" +
                      (curve ? "'s key)" : ": CURVE?)"));
  } catch (const zmq::error_t& e) {
    return make_error("cannot reach " + endpoint + ": " + e.what());
  }
}

std::string format_status(const status_report& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "step %lld | policy v%lld | candidates: %lld generated, %lld scored, %lld in flight, %lld "
                "re-dispatched | %.2f scored/s | staleness %.2f | %.0f s\n",
                static_cast<long long>(r.step), static_cast<long long>(r.policy_version),
                static_cast<long long>(r.candidates_generated), static_cast<long long>(r.candidates_scored),
                static_cast<long long>(r.candidates_in_flight), static_cast<long long>(r.redispatched),
                r.candidates_per_s, r.staleness_mean, r.wall_s);
  out += line;
  out +=
      "\n| role            | actors | busy | queued | restarts "
      "|\n|-----------------|--------|------|--------|----------|\n";
  for (const auto& rs : r.roles) {
    std::snprintf(line, sizeof line, "| %-15s | %6d | %4d | %6lld | %8d |\n", rs.role.c_str(), rs.actors,
                  rs.busy, static_cast<long long>(rs.queued), rs.restarts);
    out += line;
  }
  if (!r.nodes.empty()) {
    out +=
        "\n| node                 | roles                          | devices          | in flight | queued | "
        "silent s |\n"
        "|----------------------|--------------------------------|------------------|-----------|--------|---"
        "-------|\n";
    for (const auto& n : r.nodes) {
      std::string roles, devices;
      for (const auto& [role, c] : n.roles)
        roles += (roles.empty() ? "" : ", ") + role + " x" + std::to_string(c);
      for (const auto& d : n.devices) devices += (devices.empty() ? "" : ", ") + d;
      std::snprintf(line, sizeof line, "| %-20s | %-30s | %-16s | %9d | %6d | %8.1f |%s\n", n.node_id.c_str(),
                    roles.c_str(), devices.c_str(), n.in_flight, n.queued, n.silent_s,
                    n.draining ? " draining" : "");
      out += line;
    }
  }
  if (!r.rejected.empty()) {
    std::string parts;
    for (const auto& [why, n] : r.rejected)
      parts += (parts.empty() ? "" : ", ") + why + " " + std::to_string(n);
    out += "\nrejected from the wire: " + parts + "\n";
  }
  return out;
}

}  // namespace crucible::runtime
