#include <cstdio>
#include <iostream>

#include <spdlog/spdlog.h>

#include "actors/roles.hpp"
#include "cli/commands.hpp"
#include "runtime/cluster/node_session.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/logging.hpp"
#include "runtime/hosting/plugin_loader.hpp"

namespace crucible::cli {

int node_command(const node_args& args) {
  auto cfg = args.config_path.empty() ? runtime::parse_config(runtime::embedded_default_config(),
                                                              args.overrides, "embedded configs/local.yaml")
                                      : runtime::load_config(args.config_path, args.overrides);
  if (!cfg) {
    std::cerr << "crucible node: " << cfg.message() << "\n";
    return 2;
  }
  auto opts = runtime::resolve_node_options(*cfg, args.join, args.roles, args.devices, args.node_id);
  if (!opts) {
    std::cerr << "crucible node: " << opts.message() << "\n";
    return 2;
  }
  // The node's own directory (compile cache, worker logs) under the run's: nodes never share one.
  runtime::config node_cfg = *cfg;
  node_cfg.run.dir = cfg->run.dir + "/nodes/" + opts->node_id;
  node_cfg.cluster.listen.clear();
  if (!opts->devices.empty()) node_cfg.cuda.devices = opts->devices;
  auto run = runtime::prepare_run(node_cfg, false);
  if (!run) {
    std::cerr << "crucible node: " << run.message() << "\n";
    return 2;
  }
  runtime::init_logging(cfg->run.log_level, (*run)->path("crucible.log"), false);
  auto registry = std::make_shared<runtime::role_registry>();
  actors::register_builtin_roles(*registry);
  if (auto p = runtime::load_configured_plugins(*cfg, *registry); !p) {
    std::cerr << "crucible node: " << p.message() << "\n";
    spdlog::shutdown();
    return 2;
  }
  auto summary = runtime::run_node(*run, registry, *opts);
  if (!summary) {
    std::cerr << "crucible node: " << summary.message() << "\n";
    spdlog::shutdown();
    return 2;
  }
  std::printf("crucible node %s: served %lld work items (%lld failed) in %lld sessions\n",
              opts->node_id.c_str(), static_cast<long long>(summary->served),
              static_cast<long long>(summary->failed), static_cast<long long>(summary->registrations));
  spdlog::shutdown();
  return 0;
}

}  // namespace crucible::cli
