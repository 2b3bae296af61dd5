#include "runtime/cluster/control_client.hpp"

#include <cstdio>

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>
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
  if (r.step > 0 || !r.speedup_best.empty()) {
    // The best speedups, fastest first (ten at most): what the run has found so far.
    std::vector<std::pair<std::string, double>> best(r.speedup_best.begin(), r.speedup_best.end());
    std::sort(best.begin(), best.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    const auto faster = std::count_if(best.begin(), best.end(), [](const auto& b) { return b.second > 1.0; });
    std::snprintf(line, sizeof line,
                  "reward %.3f (mean of the last step) | faster than eager: %lld of %zu tasks\n",
                  r.reward_mean, static_cast<long long>(faster), best.size());
    out += line;
    if (!best.empty()) {
      out += "best:";
      for (size_t i = 0; i < best.size() && i < 10; ++i) {
        std::snprintf(line, sizeof line, "%s %s %.2fx", i ? "," : "", best[i].first.c_str(), best[i].second);
        out += line;
      }
      out += best.size() > 10 ? ", ...\n" : "\n";
    }
  }
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

nlohmann::json status_json(const status_report& r) {
  nlohmann::json j = {{"step", r.step},
                      {"policy_version", r.policy_version},
                      {"candidates_generated", r.candidates_generated},
                      {"candidates_scored", r.candidates_scored},
                      {"candidates_in_flight", r.candidates_in_flight},
                      {"candidates_abandoned", r.candidates_abandoned},
                      {"candidates_resumed", r.candidates_resumed},
                      {"redispatched", r.redispatched},
                      {"candidates_per_s", r.candidates_per_s},
                      {"reward_mean", r.reward_mean},
                      {"staleness_mean", r.staleness_mean},
                      {"speedup_best", r.speedup_best},
                      {"wall_s", r.wall_s},
                      {"rejected", r.rejected}};
  if (!r.error.empty()) j["error"] = r.error;
  j["roles"] = nlohmann::json::object();
  for (const auto& rs : r.roles)
    j["roles"][rs.role] = {
        {"actors", rs.actors}, {"busy", rs.busy}, {"queued", rs.queued}, {"restarts", rs.restarts}};
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : r.nodes)
    j["nodes"].push_back({{"node_id", n.node_id},
                          {"peer_id", n.peer_id},
                          {"host", n.host},
                          {"roles", n.roles},
                          {"devices", n.devices},
                          {"in_flight", n.in_flight},
                          {"queued", n.queued},
                          {"silent_s", n.silent_s},
                          {"draining", n.draining}});
  return j;
}

}  // namespace crucible::runtime
