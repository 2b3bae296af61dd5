#include "kernels/eval/speedup_metrics.hpp"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "kernels/eval/timing_stats.hpp"

namespace crucible::kernels {

namespace {

double geometric_mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(v.size()));
}

}  // namespace

speedup_summary summarize_speedups(const std::vector<std::optional<double>>& per_task,
                                   const std::vector<double>& thresholds) {
  speedup_summary s;
  s.tasks = per_task.size();
  std::vector<double> correct, all;
  for (const auto& x : per_task) {
    if (x && *x > 0 && std::isfinite(*x)) {
      correct.push_back(*x);
      all.push_back(*x);
    } else {
      all.push_back(1.0);
    }
  }
  s.correct = correct.size();
  for (double p : thresholds) {
    fast_p f;
    f.p = p;
    for (double x : correct) f.tasks += x > p ? 1 : 0;
    f.share = s.tasks ? static_cast<double>(f.tasks) / static_cast<double>(s.tasks) : 0;
    s.fast.push_back(f);
  }
  if (!correct.empty()) {
    s.mean = mean(correct);
    s.median = median(correct);
    s.geomean = geometric_mean(correct);
  }
  if (!all.empty()) {
    s.mean_all = mean(all);
    s.median_all = median(all);
    s.geomean_all = geometric_mean(all);
  }
  return s;
}

std::string format_fast_p(const speedup_summary& s) {
  std::string out;
  for (const auto& f : s.fast) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%sfast_%g %.2f (%zu/%zu)", out.empty() ? "" : ", ", f.p, f.share, f.tasks,
                  s.tasks);
    out += buf;
  }
  return out;
}

nlohmann::json speedup_summary_json(const speedup_summary& s) {
  nlohmann::json fast = nlohmann::json::object();
  for (const auto& f : s.fast) {
    char p[32];
    std::snprintf(p, sizeof p, "%g", f.p);
    fast[p] = {{"tasks", f.tasks}, {"share", f.share}};
  }
  return {{"tasks", s.tasks},       {"correct", s.correct},       {"fast_p", fast},
          {"mean", s.mean},         {"median", s.median},         {"geomean", s.geomean},
          {"mean_all", s.mean_all}, {"median_all", s.median_all}, {"geomean_all", s.geomean_all}};
}

}  // namespace crucible::kernels
