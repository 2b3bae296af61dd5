#include "kernels/eval/timing_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace crucible::kernels {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double cv(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  double m = mean(v);
  if (m == 0.0) return 0.0;
  double ss = 0.0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1)) / std::abs(m);
}

bool stop_early(int bucket, int buckets, double slowdown, double eager_ms, double candidate_ms) {
  return bucket == 0 && buckets > 1 && slowdown > 0 && candidate_ms > slowdown * eager_ms;
}

bool warming_up(int rounds, int min_rounds, double elapsed_ms, double min_ms) {
  return rounds < min_rounds || elapsed_ms < min_ms;
}

bool outside_stream(const call_clocks& c, const clock_check& k) {
  return c.device_tail_ms > k.tail_abs_ms + k.tail_rel * c.event_ms;
}

bool busy_before(const call_clocks& c, const clock_check& k) {
  return c.before_ms > k.null_before_ms + k.before_abs_ms + k.before_rel * k.null_before_ms;
}

bool seen_as_the_rule(int seen, int calls) {
  return seen >= 3 && 2 * seen >= calls;
}

double charged_ms(const call_clocks& c, const clock_check& k) {
  double device = outside_stream(c, k) ? std::max(c.event_ms, c.wall_ms - k.null_wall_ms)
                                       : c.event_ms + std::max(0.0, c.device_tail_ms - k.null_tail_ms);
  if (busy_before(c, k)) device += c.before_ms - k.null_before_ms;
  return std::max(device, c.host_ms);
}

bool wall_exceeds_events(const std::vector<call_clocks>& calls, const clock_check& k) {
  if (calls.empty()) return false;
  std::vector<double> wall, event;
  for (const auto& c : calls) {
    wall.push_back(std::max(0.0, c.wall_ms - k.null_wall_ms));
    event.push_back(c.event_ms);
  }
  double w = median(wall), e = median(event);
  return w > k.wall_rel * e && w - e > k.wall_abs_ms;
}

double roofline_ms(double bytes, double flops, double peak_bytes_per_s, double peak_flops_per_s) {
  double t = 0.0;
  if (peak_bytes_per_s > 0) t = std::max(t, bytes / peak_bytes_per_s);
  if (peak_flops_per_s > 0) t = std::max(t, flops / peak_flops_per_s);
  return t * 1e3;
}

}  // namespace crucible::kernels
