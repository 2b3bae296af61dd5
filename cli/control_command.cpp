// crucible status / crucible scale: one control frame to a running head, its status_report printed.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "runtime/cluster/control_client.hpp"
#include "runtime/config/config.hpp"

namespace crucible::cli {
namespace {

nlohmann::json to_json(const status_report& r) {
  nlohmann::json j = {{"step", r.step},
                      {"policy_version", r.policy_version},
                      {"candidates_generated", r.candidates_generated},
                      {"candidates_scored", r.candidates_scored},
                      {"candidates_in_flight", r.candidates_in_flight},
                      {"redispatched", r.redispatched},
                      {"candidates_per_s", r.candidates_per_s},
                      {"staleness_mean", r.staleness_mean},
                      {"wall_s", r.wall_s},
                      {"rejected", r.rejected}};
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

int run_control(const char* name, const control_args& args, control command) {
  command.args["timeout_s"] = std::to_string(args.timeout_s);  // the head answers within it
  std::optional<runtime::curve_client_keys> curve;
  if (!args.config_path.empty() || !args.overrides.empty()) {
    auto cfg = args.config_path.empty()
                   ? runtime::parse_config(runtime::embedded_default_config(), args.overrides)
                   : runtime::load_config(args.config_path, args.overrides);
    if (!cfg) {
      std::cerr << "crucible " << name << ": " << cfg.message() << "\n";
      return 2;
    }
    if (!cfg->cluster.secret_key.empty()) {
      auto keys = runtime::load_curve_client(cfg->cluster.secret_key, cfg->cluster.server_key);
      if (!keys) {
        std::cerr << "crucible " << name << ": " << keys.message() << "\n";
        return 2;
      }
      curve = *keys;
    }
  }
  auto r = runtime::send_control(
      args.connect, command, std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000)), curve);
  if (!r) {
    std::cerr << "crucible " << name << ": " << r.message() << "\n";
    return 1;
  }
  if (args.json)
    std::cout << to_json(*r).dump(2) << "\n";
  else
    std::cout << runtime::format_status(*r);
  return 0;
}

}  // namespace

int status_command(const control_args& args) {
  control c;
  c.command = "status";
  return run_control("status", args, c);
}

int scale_command(const control_args& args) {
  control c;
  c.command = "scale";
  c.role = args.role;
  c.count = args.count;
  if (!args.node.empty()) c.args["node"] = args.node;
  return run_control("scale", args, c);
}

}  // namespace crucible::cli
