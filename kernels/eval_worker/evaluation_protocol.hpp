#pragma once
// The evaluation protocol of DESIGN.md §5 and §6, written once for both targets. A device_backend (CPU: the
// candidate's sealed process; CUDA: the device, its stream and clocks) says how one step is done there; the
// protocol decides which steps run, in what order, on which buffers, and what their results mean:
// correctness on several seeds (one heavy-tailed) and the input-independence check, paired trials on fresh
// input values in random order with unannounced checks of timed calls, buckets, the variance gate, the
// roofline floor, and the checks after timing (fresh inputs at new addresses, the memo probe, new values at
// a used address). Every check here applies to both targets.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/reference/output_check.hpp"
#include "kernels/reference/reference_executor.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/evaluation.hpp"

namespace crucible::kernels {

/// What a backend reports of one checked call (the reference recomputed after the candidate returned).
struct checked_outcome {
  bool called = false;  ///< false: the call failed, and the backend recorded why
  output_comparison cmp;
  uint64_t got_digest = 0, want_digest = 0;  ///< of the output's and the reference's bytes
};

/// The reference timed beside the candidate: eager, and (CUDA) its CUDA-graph replay and, for KernelBench
/// modules when asked, its torch.compile forms (default mode, mode reduce-overhead).
enum class baseline { eager, graph, compile, compile_reduce_overhead };
constexpr size_t baseline_count = 4;
/// How notes name a baseline: "eager", "CUDA graph", "torch.compile", "torch.compile reduce-overhead".
const char* baseline_name(baseline b);

/// Why a timed call of the candidate is made; only bucket calls enter the timing result.
enum class timed_use { warmup, bucket, probe };

/// A device's peaks for the roofline floor (task_cost.hpp); 0 where unknown.
struct device_peaks {
  double bytes_per_s = 0.0, flops_per_s = 0.0;
  const char* where = "the device";  ///< "this core", for the notes
};

/// One device's way of doing each step. Buffers are slots, each an input set and an output at addresses of
/// its own, allocated by the backend before the protocol starts. Every call of the candidate, checked or
/// timed, must look the same from inside it: the same flush, poison and gate sequence. A step that fails
/// records why in the bench_result (error, or status crash / timeout, or evidence) and reports it; halted()
/// then stays true.
class device_backend {
 public:
  virtual ~device_backend() = default;
  /// The number of slots the backend holds.
  virtual size_t slots() const = 0;
  /// Before the first call: the cost of an empty call. False when that failed.
  virtual bool calibrate() = 0;
  /// Draws fresh input values into `slot` (outside any clock).
  virtual void fill(size_t slot, uint64_t seed, input_variant variant) = 0;
  /// The input values of `from` into `to` (the same values at other addresses).
  virtual void copy_inputs(size_t from, size_t to) = 0;
  /// A correctness call: the candidate on `slot`, then every check of its output and inputs the device can
  /// make, then the reference on pristine copies of the inputs, compared.
  virtual checked_outcome checked_call(size_t slot, const std::string& phase) = 0;
  /// A timed call of the candidate on `slot`: the milliseconds charged to it, negative when it failed.
  virtual double timed_call(size_t slot, timed_use use, const std::string& phase) = 0;
  /// The reference timed on `slot`'s inputs; negative when it failed.
  virtual double timed_baseline(baseline b, size_t slot, const std::string& phase) = 0;
  /// The last timed call's cost beyond what its clocks time (CUDA: its device tail and longer flush below
  /// the evidence thresholds). The candidate's is in what timed_call returned; under
  /// eval_options::bucket_charge_cap a baseline's is not, and the protocol charges it per bucket.
  virtual double last_extra_ms() const { return 0.0; }
  /// Whether baseline `b` is available on `slot`.
  virtual bool has_baseline(baseline b, size_t slot) const = 0;
  /// The output the last timed call left in `slot` against the reference recomputed now on its inputs.
  virtual output_comparison check_output(size_t slot, const std::string& phase) = 0;
  /// Timing slots [first, first + count) are about to be used: baselines prepared, clocks calibrated.
  virtual bool prepare_timing(size_t first, size_t count) = 0;
  /// Timing is over (the result filled in): the backend's checks over all timed calls, and its notes.
  virtual void timing_done() = 0;
  /// After correctness: checks over its calls.
  virtual void correctness_done() = 0;
  /// The evaluation is over: checks over all its calls.
  virtual void finish() = 0;
  /// Whether the evidence so far still allows timing (CUDA: work that escaped the stream but was right).
  virtual bool time_despite_evidence() const { return false; }
  /// True when the reference's output would be within the candidate's reach while it runs, so the candidate
  /// must run first on each trial's values; otherwise the order of a trial is random.
  virtual bool candidate_first() const = 0;
  virtual device_peaks peaks() const = 0;
  /// The least work of the task (the reference's minimum_cost()), against the peaks.
  virtual task_cost minimum_cost() const = 0;
  /// The peaks measured once more, before a time below the floor is called impossible (a figure measured on
  /// a loaded machine reads low); the same as peaks() where they are the device's specification.
  virtual device_peaks peaks_again() { return peaks(); }
  virtual bool halted() const = 0;
};

/// Milliseconds of the protocol's phases and their parts, for the worker's phases_ms note.
struct protocol_times {
  double correctness = 0, timing = 0, post_timing = 0;
  double fill = 0;   ///< drawing fresh input values for timed trials
  double check = 0;  ///< unannounced checks of timed calls
  double memo = 0;   ///< the memo probe
};

/// The protocol for one request on one backend, writing into `r`. `scrutiny`: static features are present,
/// so every timed call is checked.
class evaluation_protocol {
 public:
  evaluation_protocol(const eval_request& req, device_backend& backend, bool scrutiny, bench_result& r);
  void run();
  const protocol_times& times() const { return times_; }

  /// Slots the protocol uses for `options`: one per correctness seed, the timing pool, one fresh for after.
  static size_t slots_needed(const eval_options& options);
  /// `options` with fewer timing input sets, then fewer seeds (the heavy-tailed one kept while two seeds
  /// fit), so that slots_needed() slots of `slot_bytes` fit in `budget_bytes`: a task whose inputs fill the
  /// device still gets fresh values and addresses. Nullopt when one seed and one input set do not fit.
  static std::optional<eval_options> fit_slots(const eval_options& options, double slot_bytes,
                                               double budget_bytes);

 private:
  struct bucket_run;
  void correctness();
  bool trial(bucket_run* into, const std::string& phase);
  bucket_run run_buckets();
  void timing();
  void roofline(double candidate_ms);
  void post_timing();
  bool memo_probe(size_t a, size_t b);
  void wrong_after_correctness(evidence_kind kind, const output_comparison& cmp, const std::string& where);

  const eval_request& req_;
  const eval_options& opt_;
  device_backend& b_;
  bool scrutiny_;
  bench_result& r_;
  protocol_times times_;
  uint64_t base_seed_ = 0;
  uint64_t rng_state_ = 0;
  size_t seeds_ = 1, first_timing_ = 1, timing_slots_ = 1, next_ = 0;
  uint64_t trials_drawn_ = 0;
  int timed_checks_ = 0;
  uint64_t next_random();
  double uniform();
  // Each side's counted calls (the candidate's, then each baseline's) summed by their place in the trial,
  // 0 being the first call after the trial's fresh draw: what the place costs is seen in every run.
  struct place_sums {
    std::array<double, baseline_count + 1> ms{};
    std::array<int, baseline_count + 1> calls{};
  };
  std::array<place_sums, baseline_count + 1> by_place_;
  void note_places();
};

/// Records evidence once per tag, with its note (the tag, then why).
void add_evidence(bench_result& r, evidence_kind kind, const std::string& note,
                  const std::string& detail = {});
bool has_evidence(const bench_result& r, evidence_kind kind);
/// The evidence of an output that is not what it claims (a KernelBench module's tensor subclass whose storage
/// lacks the shape it reports), in the same words on every target; `why` is the call's error.
void add_disguised_output(bench_result& r, const std::string& why);
/// Keeps the largest finite errors seen in r.
void note_errors(bench_result& r, const output_comparison& cmp);
/// Wrong by more than 1% of elements, or with elements never written: a hack, not an inexact kernel.
bool grossly_wrong(const output_comparison& cmp);
/// A 64-bit digest of `n` bytes (the input-independence check compares outputs by it).
uint64_t bytes_digest(const void* data, size_t n);
/// "%.4g".
std::string fmt_number(double v);

}  // namespace crucible::kernels
