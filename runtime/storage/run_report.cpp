#include "runtime/storage/run_report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "runtime/config/run_context.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {

expected<run_report> make_run_report(const std::string& run_dir) {
  run_report r;
  r.dir = run_dir;
  std::ifstream in(run_dir + "/metrics.jsonl");
  if (!in) return make_error("'" + run_dir + "' has no metrics.jsonl (is it a run directory?)");
  std::vector<double> rewards;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      rewards.push_back(j.at("reward_mean").get<double>());
      r.steps = j.at("step").get<int64_t>();
      r.wall_s = j.at("wall_s").get<double>();
    } catch (const std::exception& e) {
      return make_error(run_dir + "/metrics.jsonl: line " + std::to_string(rewards.size() + 1) + ": " +
                        e.what());
    }
  }
  if (!rewards.empty()) {
    r.fifth = std::max<int64_t>(1, static_cast<int64_t>(rewards.size()) / 5);
    double first = 0, last = 0;
    for (int64_t i = 0; i < r.fifth; ++i) {
      first += rewards[static_cast<size_t>(i)];
      last += rewards[rewards.size() - 1 - static_cast<size_t>(i)];
    }
    r.first_fifth_reward = first / static_cast<double>(r.fifth);
    r.last_fifth_reward = last / static_cast<double>(r.fifth);
  }

  auto summary = replay_store::summarize(run_dir + "/replay.sqlite");
  if (!summary) return summary.err();
  r.outcomes = summary->outcomes;
  r.candidates = summary->candidates;
  r.hack_flags = summary->hack_flags;
  r.reviews = summary->reviews;
  if (std::ifstream cases(run_dir + "/hack_cases.jsonl"); cases)
    for (std::string line; std::getline(cases, line);) r.hack_cases += !line.empty();
  std::vector<std::string> names;
  // By name only: a KernelBench task is read by running its module (on the device, where the run may
  // still be measuring).
  if (auto cfg = load_run_config(run_dir, {}))
    if (auto tasks = select_task_names(*cfg)) names = std::move(*tasks);
  for (const auto& g : summary->groups)
    if (std::find(names.begin(), names.end(), g.task) == names.end()) names.push_back(g.task);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    task_progress t;
    t.task = name;
    for (const auto& g : summary->groups) {
      if (g.task != name || g.state == "partial") continue;
      if (t.groups++ == 0) t.first_reward = g.reward_mean, t.first_version = g.policy_version;
      t.last_reward = g.reward_mean;
      t.last_version = g.policy_version;
    }
    if (auto it = summary->speedup_best.find(name); it != summary->speedup_best.end())
      t.best_speedup = it->second;
    if (auto it = summary->speedup_best_vs_graph.find(name); it != summary->speedup_best_vs_graph.end())
      t.best_vs_graph = it->second;
    r.tasks_faster += t.best_speedup > 1.0;
    r.tasks_improved += t.groups >= 2 && t.last_reward > t.first_reward;
    r.tasks.push_back(t);
  }
  r.tasks_total = r.tasks.size();
  std::vector<std::optional<double>> best, graph;
  for (const auto& t : r.tasks) {
    best.push_back(t.best_speedup > 0 ? std::optional<double>(t.best_speedup) : std::nullopt);
    graph.push_back(t.best_vs_graph > 0 ? std::optional<double>(t.best_vs_graph) : std::nullopt);
  }
  r.vs_eager = kernels::summarize_speedups(best);
  r.vs_graph = kernels::summarize_speedups(graph);
  r.mean_best = r.vs_eager.mean;
  r.median_best = r.vs_eager.median;
  r.mean_best_vs_graph = r.vs_graph.mean;
  r.median_best_vs_graph = r.vs_graph.median;
  return r;
}

std::string format_run_report(const run_report& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "run %s: %lld learner steps in %.0f s, %lld candidates\n", r.dir.c_str(),
                static_cast<long long>(r.steps), r.wall_s, static_cast<long long>(r.candidates));
  out += buf;
  std::snprintf(buf, sizeof buf, "mean reward, first fifth of steps (%lld): %.3f   last fifth: %.3f\n",
                static_cast<long long>(r.fifth), r.first_fifth_reward, r.last_fifth_reward);
  out += buf;
  std::snprintf(buf, sizeof buf, "tasks with a verified candidate faster than LibTorch eager: %zu of %zu\n",
                r.tasks_faster, r.tasks_total);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "tasks whose last group's mean reward beats their first group's: %zu of %zu\n",
                r.tasks_improved, r.tasks_total);
  out += buf;
  std::snprintf(
      buf, sizeof buf,
      "best verified speedup per task vs eager: mean %.2fx, median %.2fx, geomean %.2fx (over the %zu "
      "tasks with one; geomean over all, 1x where none: %.2fx)\n",
      r.mean_best, r.median_best, r.vs_eager.geomean, r.vs_eager.correct, r.vs_eager.geomean_all);
  out += buf;
  out += "  " + kernels::format_fast_p(r.vs_eager) + "\n";
  if (r.mean_best_vs_graph > 0) {
    std::snprintf(buf, sizeof buf,
                  "the same candidates vs the CUDA graph: mean %.2fx, median %.2fx, geomean %.2fx\n",
                  r.mean_best_vs_graph, r.median_best_vs_graph, r.vs_graph.geomean);
    out += buf;
    out += "  " + kernels::format_fast_p(r.vs_graph) + "\n";
  }
  out += "outcomes:";
  for (const auto& [o, n] : r.outcomes) out += " " + o + " " + std::to_string(n);
  out += "\n";
  if (!r.hack_flags.empty()) {
    out += "what convicted the hacks:";
    for (const auto& [f, n] : r.hack_flags) out += " " + f + " " + std::to_string(n);
    out += "\n";
  }
  if (!r.reviews.empty() || r.hack_cases > 0) {
    int64_t reviewed = 0;
    for (const auto& [f, n] : r.reviews) reviewed += n;
    out += "judge: " + std::to_string(reviewed) + " outliers reviewed";
    for (const auto& [f, n] : r.reviews) out += ", " + f + " " + std::to_string(n);
    out += "; " + std::to_string(r.hack_cases) + " confirmed hacks in the case database\n";
  }
  out += "\n";
  std::snprintf(buf, sizeof buf, "| %-32s | %6s | %12s | %12s | %13s | %13s |\n", "task", "groups",
                "first reward", "last reward", "best speedup", "its vs graph");
  out += buf;
  out += "|" + std::string(34, '-') + "|" + std::string(8, '-') + "|" + std::string(14, '-') + "|" +
         std::string(14, '-') + "|" + std::string(15, '-') + "|" + std::string(15, '-') + "|\n";
  for (const auto& t : r.tasks) {
    std::string best =
        t.best_speedup > 0 ? (std::snprintf(buf, sizeof buf, "%.2fx", t.best_speedup), buf) : "-";
    std::string graph =
        t.best_vs_graph > 0 ? (std::snprintf(buf, sizeof buf, "%.2fx", t.best_vs_graph), buf) : "-";
    std::snprintf(buf, sizeof buf, "| %-32s | %6lld | %12.3f | %12.3f | %13s | %13s |\n", t.task.c_str(),
                  static_cast<long long>(t.groups), t.first_reward, t.last_reward, best.c_str(),
                  graph.c_str());
    out += buf;
  }
  return out;
}

std::string run_report_json(const run_report& r) {
  using nlohmann::json;
  json tasks = json::array();
  for (const auto& t : r.tasks)
    tasks.push_back({{"task", t.task},
                     {"groups", t.groups},
                     {"first_reward", t.first_reward},
                     {"last_reward", t.last_reward},
                     {"first_version", t.first_version},
                     {"last_version", t.last_version},
                     {"best_speedup", t.best_speedup},
                     {"best_vs_graph", t.best_vs_graph}});
  json j = {{"dir", r.dir},
            {"steps", r.steps},
            {"wall_s", r.wall_s},
            {"fifth", r.fifth},
            {"first_fifth_reward", r.first_fifth_reward},
            {"last_fifth_reward", r.last_fifth_reward},
            {"tasks_total", r.tasks_total},
            {"tasks_faster", r.tasks_faster},
            {"tasks_improved", r.tasks_improved},
            {"vs_eager", kernels::speedup_summary_json(r.vs_eager)},
            {"vs_graph", kernels::speedup_summary_json(r.vs_graph)},
            {"tasks", tasks},
            {"outcomes", r.outcomes},
            {"hack_flags", r.hack_flags},
            {"reviews", r.reviews},
            {"hack_cases", r.hack_cases},
            {"candidates", r.candidates}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

expected<std::string> metrics_csv(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  if (!in) return make_error("'" + run_dir + "' has no metrics.jsonl (is it a run directory?)");
  std::vector<nlohmann::json> rows;
  std::vector<std::string> columns = {"step"};
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object())
      return make_error(run_dir + "/metrics.jsonl: line " + std::to_string(n) + " is not JSON");
    for (const auto& [key, value] : j.items())
      if (value.is_number() && std::find(columns.begin(), columns.end(), key) == columns.end())
        columns.push_back(key);
    rows.push_back(std::move(j));
  }
  std::sort(columns.begin() + 1, columns.end());
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + columns[c];
  out += "\n";
  for (const auto& j : rows) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ",";
      auto it = j.find(columns[c]);
      if (it != j.end() && it->is_number()) out += it->dump();
    }
    out += "\n";
  }
  return out;
}

}  // namespace crucible::runtime
