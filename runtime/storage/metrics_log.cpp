#include "runtime/storage/metrics_log.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace crucible::runtime {

std::string to_json_line(const step_metrics& m) {
  nlohmann::json j;
  j["step"] = m.step;
  j["policy_version"] = m.policy_version;
  j["reward_mean"] = m.reward_mean;
  j["correct_rate"] = m.correct_rate;
  j["flagged_rate"] = m.flagged_rate;
  j["speedup_mean"] = m.speedup_mean;
  j["candidates"] = m.candidates;
  j["candidates_total"] = m.candidates_total;
  j["staleness_mean"] = m.staleness_mean;
  j["wall_s"] = m.wall_s;
  j["loss"] = m.loss;
  j["kl"] = m.kl;
  j["entropy"] = m.entropy;
  j["speedup_best"] = m.speedup_best;
  return j.dump();
}

expected<int64_t> roll_back_metrics(const std::string& path, int64_t after_step,
                                    const std::string& aside_path) {
  std::ifstream in(path);
  if (!in) return int64_t{0};  // no step was logged yet
  std::vector<std::string> keep, moved;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    bool kept = !j.is_discarded() && j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                j["step"].get<int64_t>() <= after_step;
    (kept ? keep : moved).push_back(line);
  }
  in.close();
  if (moved.empty()) return int64_t{0};
  {
    std::ofstream aside(aside_path, std::ios::app);
    for (const auto& line : moved) aside << line << '\n';
    if (!aside) return make_error("cannot write " + aside_path);
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& line : keep) out << line << '\n';
    if (!out) return make_error("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return make_error("cannot replace " + path + ": " + ec.message());
  return static_cast<int64_t>(moved.size());
}

bool append_metrics(const std::string& path, const step_metrics& m) {
  std::ofstream out(path, std::ios::app);
  if (!out) {
    spdlog::error("cannot append to {}", path);
    return false;
  }
  out << to_json_line(m) << '\n';
  out.flush();
  return static_cast<bool>(out);
}

std::string progress_line(const step_metrics& m, double candidates_per_s, size_t tasks_total) {
  size_t faster = 0;
  double best = 0.0;
  std::string best_task;
  for (const auto& [task, s] : m.speedup_best) {
    if (s > 1.0) ++faster;
    if (s > best) best = s, best_task = task;
  }
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "step %3lld | v%lld | reward %6.3f | correct %3.0f%% | flagged %2.0f%% | faster than eager: "
                "%zu/%zu tasks | best %.2fx (%s) | %.2f cand/s | %4.0fs",
                static_cast<long long>(m.step), static_cast<long long>(m.policy_version), m.reward_mean,
                100 * m.correct_rate, 100 * m.flagged_rate, faster, tasks_total, best,
                best_task.empty() ? "-" : best_task.c_str(), candidates_per_s, m.wall_s);
  return buf;
}

}  // namespace crucible::runtime
