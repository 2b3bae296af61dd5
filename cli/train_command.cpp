#include <cstdio>
#include <iostream>

#include <spdlog/spdlog.h>

#include "actors/roles.hpp"
#include "cli/commands.hpp"
#include "policies/program_policy.hpp"
#include "runtime/config.hpp"
#include "runtime/logging.hpp"
#include "runtime/plugin_loader.hpp"
#include "runtime/train_session.hpp"

namespace crucible::cli {

int train_command(const train_args& args) {
  bool resume = !args.resume_dir.empty();
  expected<runtime::config> cfg = resume ? runtime::load_run_config(args.resume_dir, args.overrides)
                                  : args.config_path.empty()
                                      ? runtime::parse_config(runtime::embedded_default_config(),
                                                              args.overrides, "embedded configs/local.yaml")
                                      : runtime::load_config(args.config_path, args.overrides);
  if (!cfg) {
    std::cerr << "crucible train: " << cfg.message() << "\n";
    return 2;
  }
  if (auto st = policies::validate_config(cfg->policy); !st) {
    std::cerr << "crucible train: policy: " << st.message() << "\n";
    return 2;
  }
  if (args.print_config) {
    std::cout << runtime::to_yaml(*cfg);
    return 0;
  }
  auto run = runtime::prepare_run(*cfg, resume);
  if (!run) {
    std::cerr << "crucible train: " << run.message() << "\n";
    return 2;
  }
  runtime::init_logging(cfg->run.log_level, (*run)->path("crucible.log"), cfg->run.progress);
  policies::set_intra_op_threads(static_cast<int>(cfg->policy_threads));
  auto registry = std::make_shared<runtime::role_registry>();
  actors::register_builtin_roles(*registry);
  // Plugins (config `plugins:`) add their roles beside the built-in ones, before any actor starts.
  if (auto plugins = runtime::load_configured_plugins(*cfg, *registry); !plugins) {
    std::cerr << "crucible train: " << plugins.message() << "\n";
    spdlog::shutdown();
    return 2;
  }
  std::printf("crucible train: %zu tasks, run directory %s%s\n", (*run)->tasks.size(), (*run)->dir.c_str(),
              resume ? " (resumed)" : "");
  std::fflush(stdout);
  auto summary = runtime::run_training(*run, registry);
  if (!summary) {
    std::cerr << "crucible train: " << summary.message() << "\n";
    spdlog::shutdown();
    return 2;
  }
  const auto& c = summary->conductor;
  std::printf(
      "\n%s after %lld learner steps in %.0f s: %lld candidates generated, %lld scored, %lld abandoned "
      "at the stop, %lld lost, %lld stage re-dispatches\n",
      summary->interrupted ? "interrupted"
      : summary->timed_out ? "time budget spent"
                           : "done",
      static_cast<long long>(summary->steps), summary->wall_s, static_cast<long long>(c.candidates_generated),
      static_cast<long long>(c.candidates_scored), static_cast<long long>(c.candidates_abandoned),
      static_cast<long long>(c.candidates_in_flight), static_cast<long long>(c.redispatched));
  size_t faster = 0;
  for (const auto& [task, s] : c.speedup_best) faster += s > 1.0;
  std::printf("best verified speedup vs LibTorch eager (%zu of %zu tasks faster):\n", faster,
              (*run)->tasks.size());
  for (const auto& t : (*run)->tasks) {
    auto it = c.speedup_best.find(t.name);
    if (it == c.speedup_best.end())
      std::printf("  %-28s  -\n", t.name.c_str());
    else
      std::printf("  %-28s %7.2fx\n", t.name.c_str(), it->second);
  }
  std::printf("metrics: %s/metrics.jsonl  replay: %s/replay.sqlite  checkpoints: %s/checkpoints/\n",
              (*run)->dir.c_str(), (*run)->dir.c_str(), (*run)->dir.c_str());
  spdlog::shutdown();
  return 0;
}

}  // namespace crucible::cli
