// crucible status / crucible scale: one control frame to a running head, its status_report printed.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "runtime/cluster/control_client.hpp"
#include "runtime/config/config.hpp"

namespace crucible::cli {
namespace {

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
    std::cout << runtime::status_json(*r).dump(2) << "\n";
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
