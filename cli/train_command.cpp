#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/options/policy_section.hpp"
#include "actors/options/sft_section.hpp"
#include "actors/roles.hpp"
#include "actors/stages/stage_runner.hpp"
#include "cli/commands.hpp"
#include "policies/program_policy.hpp"
#include "runtime/cluster/control_client.hpp"
#include "runtime/cluster/launch_plan.hpp"
#include "runtime/cluster/node_session.hpp"
#include "runtime/config/config.hpp"
#include "runtime/config/run_checks.hpp"
#include "runtime/config/run_context.hpp"
#include "runtime/hosting/logging.hpp"
#include "runtime/hosting/plugin_loader.hpp"
#include "runtime/hosting/terminal_progress.hpp"
#include "runtime/hosting/train_session.hpp"
#include "runtime/pipeline/training_stages.hpp"
#include "runtime/storage/checkpoints.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::cli {
namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// Every line of `text` as a YAML comment, so a dry run's whole output is still a config file.
std::string commented(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) out += (line.empty() ? "#" : "# " + line) + "\n";
  return out;
}

// KernelBench tasks are answered in Python (ModelNew): the program policy writes C-ABI kernels for op chains,
// so it can neither answer them nor write the sft stage's corpus for them.
status check_kernelbench_policy(const runtime::config& cfg) {
  if (cfg.tasks.kernelbench_dir.empty()) return {};
  if (cfg.section<actors::policy_section>().kind == "program")
    return make_error(
        "tasks.kernelbench_dir: the program policy writes C-ABI kernels for op-chain tasks; a "
        "KernelBench task's answer is a Python ModelNew: set policy.kind to lm or remote");
  for (const auto& s : cfg.stages)
    if (s == "sft" && cfg.section<actors::sft_section>().corpus_policy == "program")
      return make_error(
          "tasks.kernelbench_dir: the sft stage's corpus is written by sft.corpus_policy, and the program "
          "policy writes C-ABI kernels: set sft.corpus_policy to remote (the model at policy.remote writes "
          "it) or to none with sft.jsonl (e.g. from crucible rejudge --sft-jsonl)");
  return {};
}

// --dry-run: the resolved config, then the placement plan and the tasks as comments. Every check `train`
// makes before it starts anything runs here too (tasks, plugins, roles, the pipeline): exit 2 when the run
// could not start.
int dry_run(const runtime::config& cfg, const runtime::launch_info& launch) {
  std::cout << runtime::to_yaml(cfg) << "\n"
            << commented(runtime::format_placement(runtime::plan_placement(cfg, launch)));
  auto tasks = runtime::select_tasks(cfg);
  if (!tasks) {
    std::cout.flush();
    std::cerr << "crucible train: " << tasks.message() << "\n";
    return 2;
  }
  std::string names;
  for (size_t i = 0; i < tasks->size() && i < 12; ++i) names += (i ? ", " : "") + (*tasks)[i].name;
  if (tasks->size() > 12) names += ", ... (" + std::to_string(tasks->size() - 12) + " more)";
  std::cout << commented("tasks (" + std::to_string(tasks->size()) + ", target " + cfg.target +
                         "): " + names);
  std::cout.flush();
  runtime::role_registry registry;
  actors::register_builtin_roles(registry);
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // the YAML on stdout stays YAML
  auto plugins = runtime::load_configured_plugins(cfg, registry);
  spdlog::set_level(level);
  if (!plugins) {
    std::cerr << "crucible train: " << plugins.message() << "\n";
    return 2;
  }
  if (auto st = check_kernelbench_policy(cfg); !st) {
    std::cerr << "crucible train: " << st.message() << "\n";
    return 2;
  }
  if (auto st = runtime::check_run_plan(cfg, &registry); !st) {
    std::cerr << "crucible train: the run cannot start: " << st.message() << "\n";
    return 2;
  }
  return 0;
}

// A node a launcher started (Slurm task > 0): the node path against the launch's head, and a watcher that
// makes it leave once the head is gone for good, so the launcher's job step ends with the run.
int launched_node(const train_args& args, const runtime::config& cfg, const runtime::launch_info& launch) {
  node_args n;
  if (args.resume_dir.empty()) {
    n.config_path = args.config_path;
    n.overrides = args.overrides;
  } else {
    n.config_path = args.resume_dir + "/config.yaml";
    n.overrides = {"run.dir=" + args.resume_dir};
    n.overrides.insert(n.overrides.end(), args.overrides.begin(), args.overrides.end());
  }
  n.join = launch.join;
  n.node_id = launch.node_id;
  for (auto d : launch.devices.devices) n.devices += (n.devices.empty() ? "" : ",") + std::to_string(d);
  std::optional<runtime::curve_client_keys> curve;
  if (!cfg.cluster.secret_key.empty()) {
    auto keys = runtime::load_curve_client(cfg.cluster.secret_key, cfg.cluster.server_key);
    if (!keys) {
      std::cerr << "crucible train: cluster: " << keys.message() << "\n";
      return 2;
    }
    curve = *keys;
  }
  std::printf("crucible train: %s task %lld of %lld on %s is a node (id %s) of the head at %s%s%s\n",
              launch.launcher.c_str(), static_cast<long long>(launch.procid),
              static_cast<long long>(launch.ntasks), launch.host.c_str(), launch.node_id.c_str(),
              launch.join.c_str(), launch.devices.devices.empty() ? "" : ", GPUs from ",
              launch.devices.devices.empty() ? "" : launch.devices.from.c_str());
  std::fflush(stdout);

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watcher([&] {
    using clock = runtime::head_absence::clock;
    auto watch = runtime::head_absence::for_config(cfg, clock::now());
    control ask;
    ask.command = "status";
    bool told = false;
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      lock.unlock();
      auto r = runtime::send_control(launch.join, ask, std::chrono::milliseconds(3000), curve);
      // Any answer, a refusal included, is a head that is there.
      bool silent =
          !r && (r.message().rfind("no answer", 0) == 0 || r.message().rfind("cannot reach", 0) == 0);
      if (!silent) watch.answered(clock::now());
      bool leave = watch.should_leave(clock::now());
      lock.lock();
      if (leave && !done) {
        if (!told) {
          std::printf("crucible train: the head at %s is gone (%s); this node leaves\n", launch.join.c_str(),
                      watch.ever_answered() ? "no answer since the run ended" : "it never answered");
          std::fflush(stdout);
          told = true;
        }
        runtime::request_node_stop();  // again each round: a stop asked before the node started is reset
      }
      cv.wait_for(lock, std::chrono::seconds(2), [&] { return done; });
    }
  });
  int rc = node_command(n);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watcher.join();
  return rc;
}

}  // namespace

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
  if (auto st = policies::validate_config(cfg->section<actors::policy_section>()); !st) {
    std::cerr << "crucible train: policy: " << st.message() << "\n";
    return 2;
  }
  if (args.print_config) {
    std::cout << runtime::to_yaml(*cfg);
    return 0;
  }
  // Which process a launcher (Slurm) started: the head, or a node of it.
  auto launch = runtime::resolve_launch(*cfg, runtime::current_environment(), this_host());
  if (!launch) {
    std::cerr << "crucible train: " << launch.message() << "\n";
    return 2;
  }
  if (args.dry_run) return dry_run(*cfg, *launch);
  if (launch->role == runtime::process_role::node) return launched_node(args, *cfg, *launch);
  // Found before the run directory is touched (a typo must not move the previous run aside); the roles that
  // plugins add are checked once they are loaded.
  if (auto st = runtime::check_run_plan(*cfg, nullptr); !st) {
    std::cerr << "crucible train: " << st.message() << "\n";
    return 2;
  }
  if (auto st = check_kernelbench_policy(*cfg); !st) {
    std::cerr << "crucible train: " << st.message() << "\n";
    return 2;
  }
  if (resume) {
    // A run that already reached its last step has nothing left to train: say so, rather than wait for
    // run.max_minutes.
    auto ck = runtime::load_latest_checkpoint(args.resume_dir + "/checkpoints");
    if (ck && ck->step >= cfg->run.max_steps) {
      // What was in flight when it ended is not trained on any more; it is stored as abandoned, not left
      // pending.
      std::string db = args.resume_dir + "/replay.sqlite";
      auto store = std::filesystem::exists(db) ? runtime::replay_store::open(db, {}, 0)
                                               : expected<runtime::replay_store>(make_error("no " + db));
      auto abandoned = store ? store->abandon_in_flight("the run had reached run.max_steps when it ended")
                             : expected<int64_t>(int64_t{0});
      if (!abandoned) {
        std::cerr << "crucible train: " << abandoned.message() << "\n";
        return 2;
      }
      if (*abandoned > 0)
        std::printf("crucible train: %lld candidates in flight when the run ended are stored as abandoned\n",
                    static_cast<long long>(*abandoned));
      std::printf(
          "crucible train: the run in %s already reached run.max_steps (%lld) at its checkpoint of step "
          "%lld; "
          "nothing to resume (to train on, raise it: --set run.max_steps=N)\n",
          args.resume_dir.c_str(), static_cast<long long>(cfg->run.max_steps),
          static_cast<long long>(ck->step));
      return 0;
    }
  }
  // Plugins (config `plugins:`) add their roles beside the built-in ones, before any actor starts, and before
  // the run directory is touched: a plugin that does not load, or roles it does not provide, leave the
  // previous run where it is.
  auto registry = std::make_shared<runtime::role_registry>();
  actors::register_builtin_roles(*registry);
  auto plugins = runtime::load_plugins(cfg->plugins, *registry);
  if (!plugins) {
    std::cerr << "crucible train: " << plugins.message() << "\n";
    return 2;
  }
  if (auto st = runtime::check_run_plan(*cfg, registry.get()); !st) {
    std::cerr << "crucible train: the run cannot start: " << st.message() << "\n";
    return 2;
  }
  std::optional<runtime::terminal_progress> loading;  // a KernelBench suite loads for seconds
  if (cfg->run.progress && runtime::terminal_progress::is_live(stdout)) {
    loading.emplace(stdout, true);
    loading->update({resume ? "reopening the run and loading its tasks" : "loading tasks"});
  }
  auto run = runtime::prepare_run(*cfg, resume);
  loading.reset();
  if (!run) {
    std::cerr << "crucible train: " << run.message() << "\n";
    return 2;
  }
  runtime::init_logging(cfg->run.log_level, (*run)->path("crucible.log"), cfg->run.progress);
  runtime::log_loaded_plugins(*plugins);
  policies::set_intra_op_threads(static_cast<int>(cfg->section<actors::policy_section>().threads));
  if (!cfg->cluster.listen.empty()) {
    // The plan in the log: what the head expects of the nodes, and what will go wrong.
    auto plan = runtime::plan_placement(*cfg, *launch);
    std::istringstream lines(runtime::format_placement(plan));
    for (std::string line; std::getline(lines, line);) spdlog::info("{}", line);
    for (const auto& w : plan.warnings) std::fprintf(stderr, "crucible train: warning: %s\n", w.c_str());
  }
  if (launch->launcher != "none")
    std::printf("crucible train: %s task 0 of %lld on %s is the head; nodes join %s\n",
                launch->launcher.c_str(), static_cast<long long>(launch->ntasks), launch->host.c_str(),
                launch->join.c_str());
  std::printf("crucible train: %zu tasks, run directory %s%s\n", (*run)->tasks.size(), (*run)->dir.c_str(),
              resume ? " (resumed)" : "");
  std::fflush(stdout);
  // CUDA-L1's stages (sft, or more than one): each a run of its own under RUN_DIR/stages/.
  if (auto stages = runtime::parse_stage_list(cfg->stages); stages && runtime::staged(*stages)) {
    int rc = actors::run_stages(**run, registry);
    spdlog::shutdown();
    return rc;
  }
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
  if (c.candidates_resumed > 0)
    std::printf(
        "(of the candidates generated, %lld taken over from the run it resumes, in flight when it ended)\n",
        static_cast<long long>(c.candidates_resumed));
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
  // Only what the run wrote: a run that never made a step has no metrics to point to.
  struct output {
    const char *label, *exists, *shown;
  };
  std::string files;
  for (const output& o : {output{"metrics", "metrics.jsonl", "metrics.jsonl"},
                          output{"replay", "replay.sqlite", "replay.sqlite"},
                          output{"checkpoints", "checkpoints/LATEST", "checkpoints/"}})
    if (std::filesystem::exists((*run)->path(o.exists)))
      files += std::string(files.empty() ? "" : "  ") + o.label + ": " + (*run)->path(o.shown);
  std::printf("%s\n", files.empty() ? "nothing written: the run made no learner step" : files.c_str());
  spdlog::shutdown();
  return 0;
}

}  // namespace crucible::cli
