#include "runtime/cluster/remote_result_check.hpp"

#include <cmath>
#include <string>

#include "kernels/eval/timing_stats.hpp"

namespace crucible::runtime {

namespace {

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

bool positive_finite(double v) {
  return std::isfinite(v) && v > 0;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

status check_remote_bench(const bench_result& r) {
  const auto& t = r.timing;
  if (!r.timed) {
    if (r.speedup_vs_eager != 0 || r.speedup_vs_graph != 0 || t.speedup != 0)
      return make_error("claims a speedup of " + num(r.speedup_vs_eager) + "x without having been timed");
    return {};
  }
  const size_t n = t.bucket_speedups.size();
  if (n == 0) return make_error("timed, but carries no bucket speedups");
  if (t.eager_ms.size() != n || t.candidate_ms.size() != n)
    return make_error("carries " + std::to_string(n) + " bucket speedups for " +
                      std::to_string(t.eager_ms.size()) + " eager and " +
                      std::to_string(t.candidate_ms.size()) + " candidate times");
  for (size_t i = 0; i < n; ++i) {
    if (!positive_finite(t.eager_ms[i]) || !positive_finite(t.candidate_ms[i]))
      return make_error("bucket " + std::to_string(i) + " has times " + num(t.eager_ms[i]) + " and " +
                        num(t.candidate_ms[i]) + " ms");
    if (!near(t.bucket_speedups[i], t.eager_ms[i] / t.candidate_ms[i]))
      return make_error("bucket " + std::to_string(i) + " claims " + num(t.bucket_speedups[i]) + "x from " +
                        num(t.eager_ms[i]) + " ms eager and " + num(t.candidate_ms[i]) + " ms candidate");
  }
  const double med = kernels::median(t.bucket_speedups);
  if (!near(t.speedup, med) || !near(r.speedup_vs_eager, med))
    return make_error("claims " + num(r.speedup_vs_eager) + "x; its buckets' median is " + num(med) + "x");
  if (!near(t.eager_ms_median, kernels::median(t.eager_ms)) ||
      !near(t.candidate_ms_median, kernels::median(t.candidate_ms)))
    return make_error("its median times are not the medians of its bucket times");
  if (!t.graph_ms.empty()) {
    if (t.graph_ms.size() != n) return make_error("carries graph times for a different number of buckets");
    std::vector<double> vs_graph;
    for (size_t i = 0; i < n; ++i) {
      if (!positive_finite(t.graph_ms[i])) return make_error("bucket " + std::to_string(i) + " graph time");
      vs_graph.push_back(t.graph_ms[i] / t.candidate_ms[i]);
    }
    const double g = kernels::median(vs_graph);
    if (!near(t.speedup_vs_graph, g) || !near(r.speedup_vs_graph, g))
      return make_error("claims " + num(r.speedup_vs_graph) + "x against the CUDA graph; its buckets give " +
                        num(g) + "x");
  } else if (r.speedup_vs_graph != 0) {
    return make_error("claims a speedup against a CUDA graph it has no times for");
  }
  return {};
}

}  // namespace crucible::runtime
