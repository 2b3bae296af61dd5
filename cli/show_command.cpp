#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "runtime/storage/run_kernels.hpp"

namespace crucible::cli {
namespace {

void print_full(const scored_candidate& c, bool json) {
  if (!json) {
    std::cout << runtime::format_candidate(c) << "\n";
    return;
  }
  auto j = nlohmann::json::parse(runtime::candidate_sidecar(c));
  j["source"] = c.cand.source;
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// A task's candidates, oldest first: what each came to.
void print_task(const std::vector<scored_candidate>& all, const std::string& task) {
  std::printf("%-28s %8s %-14s %9s %8s\n", "candidate", "version", "outcome", "speedup", "reward");
  for (const auto& c : all)
    if (c.cand.task == task)
      std::printf("%-28s %8lld %-14s %8.3fx %8.3f\n", c.cand.id.c_str(),
                  static_cast<long long>(c.cand.policy_version), c.judged.outcome.c_str(), c.judged.speedup,
                  c.reward);
}

// Every task: its candidates, how many passed, and its best.
void print_tasks(const std::vector<scored_candidate>& all) {
  struct row {
    int64_t candidates = 0, passed = 0;
  };
  std::map<std::string, row> rows;
  for (const auto& c : all) {
    auto& r = rows[c.cand.task];
    ++r.candidates;
    r.passed += kernels::has_outcome(c.judged, kernels::outcome::pass);
  }
  std::map<std::string, const scored_candidate*> best_of;
  const auto best = runtime::best_per_task(all);
  for (const auto& c : best) best_of[c.cand.task] = &c;
  std::printf("%-32s %10s %7s %9s  %s\n", "task", "candidates", "passed", "best", "best candidate");
  for (const auto& [task, r] : rows) {
    const auto* b = best_of.count(task) ? best_of[task] : nullptr;
    std::printf("%-32s %10lld %7lld %8.3fx  %s\n", task.c_str(), static_cast<long long>(r.candidates),
                static_cast<long long>(r.passed), b ? b->judged.speedup : 0.0, b ? b->cand.id.c_str() : "-");
  }
  std::printf("\ncrucible show RUN_DIR --best (each in full), --task T, --candidate ID\n");
}

}  // namespace

int show_command(const show_args& args) {
  auto all = runtime::run_candidates(args.run_dir);
  if (!all) {
    std::cerr << "crucible show: " << all.message() << "\n";
    return 2;
  }
  if (!args.candidate_id.empty()) {
    for (const auto& c : *all)
      if (c.cand.id == args.candidate_id) {
        print_full(c, args.json);
        return 0;
      }
    std::cerr << "crucible show: no candidate '" << args.candidate_id << "' in " << args.run_dir << "\n";
    return 2;
  }
  if (!args.task.empty()) {
    bool known = false;
    for (const auto& c : *all) known = known || c.cand.task == args.task;
    if (!known) {
      std::cerr << "crucible show: no candidate of task '" << args.task << "' in " << args.run_dir << "\n";
      return 2;
    }
  }
  if (args.best) {
    int shown = 0;
    for (const auto& c : runtime::best_per_task(*all))
      if (args.task.empty() || c.cand.task == args.task) {
        print_full(c, args.json);
        ++shown;
      }
    if (shown == 0) {
      std::cerr << "crucible show: no verified candidate" << (args.task.empty() ? "" : " of " + args.task)
                << " in " << args.run_dir << "\n";
      return 1;
    }
    return 0;
  }
  if (!args.task.empty())
    print_task(*all, args.task);
  else
    print_tasks(*all);
  return 0;
}

}  // namespace crucible::cli
