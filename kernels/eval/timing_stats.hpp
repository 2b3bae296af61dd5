#pragma once
// The arithmetic of the timing protocol (DESIGN.md §5), shared by the CPU and CUDA sides of the eval worker
// and testable without either: summaries of trials and buckets, and the cross-check of a CUDA call's clocks
// (stream events against host wall time against a device-wide synchronize).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace crucible::kernels {

double median(std::vector<double> v);
double mean(const std::vector<double>& v);
/// Coefficient of variation (sample standard deviation over the mean); 0 for fewer than two values.
double cv(const std::vector<double>& v);

/// Early stop: after the first of several buckets, a candidate slower than eager by more than `slowdown`
/// cannot win and is not timed further (slowdown <= 0: never).
bool stop_early(int bucket, int buckets, double slowdown, double eager_ms, double candidate_ms);

/// Warm-up: whether another untimed round is due after `rounds` of them, `elapsed_ms` in: at least
/// `min_rounds`, and until `min_ms` have passed. A GPU idle between evaluations runs its first
/// milliseconds at lower clocks, which the two sides of a pair do not feel alike.
bool warming_up(int rounds, int min_rounds, double elapsed_ms, double min_ms);

/// The variance gate: while a run of buckets spreads (CV of its bucket speedups) more than `max_spread`, and
/// neither failed nor stopped early, run the buckets again, at most `max_reruns` times, keeping the steadier
/// run; a failed re-run fails the whole. `Run` has `failed`, `early_stop` and `spread`; `again()` returns a
/// new Run. Each re-run is noted in `notes`; `reruns` counts them.
template <class Run, class Again>
Run variance_gate(Run best, double max_spread, int max_reruns, Again again, int& reruns,
                  std::vector<std::string>& notes) {
  reruns = 0;
  while (!best.failed && !best.early_stop && best.spread > max_spread && reruns < max_reruns) {
    ++reruns;
    char line[128];
    std::snprintf(line, sizeof line, "variance gate: bucket speedup CV %.4g > %.4g, buckets re-run",
                  best.spread, max_spread);
    notes.push_back(line);
    Run next = again();
    if (next.failed) {
      best.failed = true;
      break;
    }
    if (next.spread <= best.spread) best = std::move(next);
  }
  return best;
}

/// The clocks of one timed CUDA call. The host takes t0 just before the call, then records an event on
/// the candidate's stream, waits for that stream (t_stream) and then for the whole device (t_device).
/// A gated call (the stream held until the host has enqueued it) starts on the device when the host
/// opens the gate after the call returned (t_open).
struct call_clocks {
  double event_ms = 0.0;        ///< between the events recorded around the call on ctx->stream
  double wall_ms = 0.0;         ///< host: t_device - t0 (gated: t_device - t_open)
  double device_tail_ms = 0.0;  ///< host: t_device - t_stream, work the device still had after our stream
  double host_ms = 0.0;         ///< gated: the host's time inside the call (0 when not gated)
  double before_ms = 0.0;       ///< host: the L2 flush and the gate's hold taking the device, before the call
};

/// Thresholds of the cross-check. `null_wall_ms` is the wall time of an empty timed region on this
/// worker (event records and both synchronizes, no work), measured when the worker starts timing.
struct clock_check {
  double null_wall_ms = 0.0;
  double null_tail_ms = 0.0;  ///< the device-wide wait of an empty region, when nothing is left to run
  double tail_abs_ms = 0.05;  ///< a device tail above tail_abs_ms + tail_rel * event_ms is outside work
  double tail_rel = 0.05;
  double wall_rel = 1.3;        ///< median wall (less the null region) above wall_rel * median event ...
  double wall_abs_ms = 0.03;    ///< ... and above it by wall_abs_ms: the events miss part of the work
  double null_before_ms = 0.0;  ///< before_ms of an empty region: the flush and the hold on an idle device
  double before_abs_ms = 0.02;  ///< before_ms above null_before_ms by before_abs_ms + before_rel * it ...
  double before_rel = 0.1;      ///< ... says other work shared the device with the flush
};

/// True when the device was still busy after the call's stream had finished: work on another stream (or
/// the legacy default stream) that outlived the call.
bool outside_stream(const call_clocks& c, const clock_check& k);

/// True when the device was busy with something else while the worker flushed the L2 and took it for the
/// call: work started between calls (a helper thread, a stream left running) that no event around the call
/// times.
bool busy_before(const call_clocks& c, const clock_check& k);

/// Whether calls with a device tail (outside_stream) or a busy flush (busy_before) prove the candidate's
/// work ran outside its stream or before its calls: only when they are the rule, at least 3 calls and at
/// least half of them. Work on another stream, or started between calls, shows at every call it is launched
/// from; a host preempted between its two waits, or while it launched the hold after the flush, shows now
/// and then (a few in a hundred calls under a busy compiler pool; two short tails in an untimed
/// evaluation's three calls). No single span proves it, however long: one flush of 151 took 0.62 ms longer on
/// an honest kernel, and a cuDNN conv_transpose3d program left tails of up to 0.62 ms after 3 of its 78
/// calls (H200, beside 14 compilers), where the hacks of these classes showed at 84 of 151 calls and more.
/// Isolated spans still cost the candidate: charged_ms counts each call's tail and longer flush.
bool seen_as_the_rule(int seen, int calls);

/// The milliseconds a call is charged: its event time, or, when work escaped the stream, the host's
/// device-wide figure (wall less the empty region), whichever is larger; and the host's own time in a
/// gated call when that is longer still (a call cannot be repeated faster than the host can issue it).
/// A tail too short to be evidence is charged too (less an empty region's): work that outlives the stream
/// by less than the threshold would otherwise be free. So is the time by which the device was busy before the
/// call (busy_before): work done during the flush would otherwise be free. All work counts.
double charged_ms(const call_clocks& c, const clock_check& k);

/// True when, over a set of calls, the host saw materially more time than the stream events did.
bool wall_exceeds_events(const std::vector<call_clocks>& calls, const clock_check& k);

/// The least time a call can take on a device: every input read and the output written once at peak
/// bandwidth, or its FLOPs at peak throughput, whichever is larger (the roofline bound). 0 when the
/// peaks are unknown.
double roofline_ms(double bytes, double flops, double peak_bytes_per_s, double peak_flops_per_s);

}  // namespace crucible::kernels
