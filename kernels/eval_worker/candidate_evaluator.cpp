#include "kernels/eval_worker/candidate_evaluator.hpp"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "kernels/abi/crucible_abi.h"
#include "kernels/eval/timing_stats.hpp"
#include "kernels/eval_worker/candidate_process.hpp"
#include "kernels/eval_worker/loaded_candidate.hpp"
#include "kernels/eval_worker/machine_peak.hpp"
#include "kernels/reference/output_check.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"
#include "kernels/task/task_cost.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A call still running after this long never finishes as far as the worker is concerned.
constexpr double call_deadline_s = 10.0;
constexpr size_t align_bytes = 64;

size_t aligned(size_t n) {
  return (n + align_bytes - 1) / align_bytes * align_bytes;
}

cru_tensor contiguous_view(char* data, const std::string& dtype, const std::vector<int64_t>& shape) {
  cru_tensor t{};
  t.data = data;
  t.dtype = dtype_code(dtype);
  t.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[static_cast<size_t>(d)];
    t.stride[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  return t;
}

// Where the worker keeps the pinned CPU of an evaluation: the candidate's host and this thread share it, so
// the caches a flush evicts are the ones the next call uses. Restored afterwards.
class cpu_pin {
 public:
  cpu_pin() {
    ok_ = sched_getaffinity(0, sizeof old_, &old_) == 0;
    cpu_ = sched_getcpu();
    if (!ok_ || cpu_ < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~cpu_pin() {
    if (pinned_) sched_setaffinity(0, sizeof old_, &old_);
  }
  int cpu() const { return pinned_ ? cpu_ : -1; }

 private:
  cpu_set_t old_{};
  int cpu_ = -1;
  bool ok_ = false, pinned_ = false;
};

// One set of buffers in the regions shared with the candidate: inputs (read-only to it) and the output.
struct slot {
  std::vector<cru_tensor> in;
  cru_tensor out{};
};

// The per-request state and every check of the protocol.
class session {
 public:
  session(const eval_request& req, const reference_executor& ref, candidate_process& host,
          const shared_region& inputs, const shared_region& outputs, size_t slots, cache_flusher* flusher,
          bool scrutiny, bench_result& out)
      : req_(req),
        opt_(req.options),
        ref_(ref),
        host_(host),
        flusher_(flusher),
        scrutiny_(scrutiny),
        r_(out),
        inputs_base_(inputs.base()) {
    atol_ = task_atol(req.task);
    rtol_ = task_rtol(req.task);
    std::random_device rd;
    base_seed_ = (uint64_t{rd()} << 32) ^ rd();
    rng_.seed(static_cast<uint32_t>(base_seed_ ^ (base_seed_ >> 32)));
    const size_t in_stride = input_slot_bytes(req.task), out_stride = output_slot_bytes(ref);
    for (size_t k = 0; k < slots; ++k) {
      slot s;
      char* p = inputs.base() + k * in_stride;
      for (const auto& spec : req.task.inputs) {
        s.in.push_back(contiguous_view(p, spec.dtype, spec.shape));
        p += aligned(static_cast<size_t>(numel(spec.shape) * dtype_size(spec.dtype)));
      }
      s.out = contiguous_view(outputs.base() + k * out_stride, ref.output_dtype(), ref.output_shape());
      slots_.push_back(s);
    }
  }

  static size_t input_slot_bytes(const task_spec& task) {
    size_t n = 0;
    for (const auto& spec : task.inputs)
      n += aligned(static_cast<size_t>(numel(spec.shape) * dtype_size(spec.dtype)));
    return n;
  }
  static size_t output_slot_bytes(const reference_executor& ref) {
    return aligned(static_cast<size_t>(numel(ref.output_shape()) * dtype_size(ref.output_dtype())));
  }

  /// Milliseconds spent in correctness, timing and post-timing checks.
  double correctness_ms = 0, timing_ms = 0, post_timing_ms = 0;
  double flush_ms = 0;  ///< part of the above spent evicting caches
  double fill_ms = 0;   ///< drawing fresh input values for timed trials
  double check_ms = 0;  ///< checking timed calls' outputs (reference recomputed outside the clock)

  void run() {
    r_.notes.push_back("seed base " + std::to_string(base_seed_));
    if (scrutiny_)
      r_.notes.push_back("scrutiny: static features present, every timed call's output is checked");
    if (!calibrate()) return;
    auto t0 = clock_type::now();
    correctness();
    auto t1 = clock_type::now();
    correctness_ms = ms_between(t0, t1);
    if (opt_.timing && failed_.empty() && !stopped_) {
      if (!r_.correct || !r_.evidence.empty() || !r_.error.empty()) {
        r_.notes.push_back("timing skipped: " + std::string(!r_.correct         ? "incorrect"
                                                            : !r_.error.empty() ? "call failed"
                                                                                : "hack evidence"));
      } else {
        timing();
        auto t2 = clock_type::now();
        timing_ms = ms_between(t1, t2);
        if (r_.error.empty() && failed_.empty() && !stopped_) post_timing();
        post_timing_ms = ms_between(t2, clock_type::now());
      }
    }
    if (failed_.empty() && !stopped_) check_outside_work("whole evaluation");
    if (denied_total_ > 0)
      r_.notes.push_back("sandbox: refused " + std::to_string(denied_total_) +
                         " system call(s) of the candidate (" + join_denied() + "); each failed with EPERM");
    if (!failed_.empty()) r_.status = failed_;
  }

 private:
  void evidence(evidence_kind kind, const std::string& note, const std::string& detail = {}) {
    const std::string tag = evidence_tag(kind, detail);
    if (std::find(r_.evidence.begin(), r_.evidence.end(), tag) == r_.evidence.end()) {
      r_.evidence.push_back(tag);
      r_.notes.push_back(tag + ": " + note);
    }
  }

  std::string join_denied() const {
    std::string s;
    for (const auto& n : denied_names_) s += (s.empty() ? "" : ", ") + n;
    return s;
  }

  void flush() {
    if (!opt_.flush_cache || !flusher_) return;
    auto t0 = clock_type::now();
    flusher_->flush();
    flush_ms += ms_between(t0, clock_type::now());
  }

  void fill(slot& s, uint64_t seed, input_variant variant) { ref_.fill_inputs(s.in, seed, variant, -1); }

  host_tensor snapshot(const cru_tensor& v, const std::string& dtype,
                       const std::vector<int64_t>& shape) const {
    host_tensor t(dtype, shape);
    std::memcpy(t.data(), v.data, t.bytes());
    return t;
  }
  host_tensor snapshot_out(const slot& s) const {
    return snapshot(s.out, ref_.output_dtype(), ref_.output_shape());
  }

  host_tensor reference(const slot& s) const {
    host_tensor want = ref_.make_output();
    cru_tensor w = want.view();
    ref_.run_views(s.in, &w, -1);
    return want;
  }

  // Every call of the candidate, checked or timed, looks the same from inside: fresh values already in
  // place, the caches flushed, the output poisoned, the same command. What happens after it is the worker's.
  candidate_call call(slot& s) {
    flush();
    poison_seed_ = (uint64_t{rng_()} << 32) ^ rng_();
    poison_random(s.out.data, ref_.output_dtype(), numel(ref_.output_shape()), poison_seed_);
    auto c = host_.call(s.in, s.out, call_deadline_s);
    note_denied(c);
    return c;
  }

  // A system call the sandbox refused is an attempt no kernel computing on its buffers makes: a thread, a
  // process, a file, a socket, a signal handler, a timer, executable memory (refused at load time too, and
  // reported with the first round trip). The attempt failed, and it is the evidence.
  void note_denied(const candidate_call& c) {
    if (!c.probes.empty())
      evidence(evidence_kind::process_probe,
               "the candidate called " + c.probes +
                   ": the allocator's knobs and heap, the environment or resource usage, which no "
                   "kernel needs and which the baseline would depend on in a shared process");
    if (c.denied <= 0) return;
    denied_total_ += c.denied;
    size_t start = 0;
    const std::string& names = c.denied_names;
    while (start < names.size()) {
      size_t comma = names.find(", ", start);
      denied_names_.insert(
          names.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
    evidence(evidence_kind::sandbox_violation,
             "the candidate's process attempted system calls its sandbox refuses (" + join_denied() + ")");
  }

  // Records a failed call: a crash or hang ends the evaluation with that status; a write to the inputs
  // (which fault in the candidate's process) is the evidence it is.
  void call_failed(const candidate_call& c, const std::string& phase) {
    if (c.sandbox_killed) {
      evidence(evidence_kind::sandbox_violation, c.error + " (" + phase + ")");
      stopped_ = true;
      return;
    }
    if (c.input_write >= 0) {
      const char* at = inputs_base_ + c.input_write;
      std::string name = "?";
      for (const auto& s : slots_)
        for (size_t i = 0; i < s.in.size(); ++i) {
          const char* d = static_cast<const char*>(s.in[i].data);
          const auto& spec = req_.task.inputs[i];
          if (at >= d && at < d + numel(spec.shape) * dtype_size(spec.dtype)) name = spec.name;
        }
      evidence(evidence_kind::input_mutated,
               "the candidate wrote to input '" + name + "' (" + phase +
                   "); inputs are read-only in its process, so the write faulted",
               name);
      stopped_ = true;
      return;
    }
    r_.error = c.error + " (" + phase + ")";
    if (c.crashed) failed_ = "crash";
    if (c.hung) failed_ = "timeout";
  }

  // The host's own cost of a round trip (the pipe, the wake-up), subtracted from every timed call.
  bool calibrate() {
    std::vector<double> cpu, wall;
    for (int i = 0; i < 21; ++i) {
      auto c = host_.null_call(call_deadline_s);
      note_denied(c);
      if (!c.ok) {
        call_failed(c, "calibration");
        return false;
      }
      cpu.push_back(c.cpu_ms);
      wall.push_back(c.wall_ms);
    }
    null_cpu_ms_ = median(cpu);
    null_wall_ms_ = median(wall);
    return true;
  }

  double charged(const candidate_call& c) const { return std::max(c.cpu_ms - null_cpu_ms_, 1e-6); }

  // All work counts: the host must be idle between calls. CPU time there means work no call was charged
  // for (a thread, a handler, a loop that answers before it computes).
  void check_outside_work(const std::string& phase) {
    if (host_.max_outside_cpu_ms() > outside_gap_ms_ || host_.outside_cpu_ms() > outside_total_ms_)
      evidence(evidence_kind::work_outside_calls,
               "the candidate's process used " + fmt(host_.outside_cpu_ms()) +
                   " ms of CPU between calls (at most " + fmt(host_.max_outside_cpu_ms()) +
                   " ms at once), where it should wait for the next one (" + phase + ")");
  }

  void check_threads(const std::string& phase) {
    int t = host_.threads();
    if (t > 1)
      evidence(evidence_kind::threads_left_running,
               std::to_string(t) + " threads in the candidate's process after a call (" + phase + ")");
  }

  struct checked {
    bool called = false;
    output_comparison cmp;
    host_tensor got, want;
  };

  // One checked call on slot s (values already drawn): the reference runs only after the candidate returned.
  checked checked_call(slot& s, const std::string& phase) {
    checked c;
    std::vector<host_tensor> pristine;
    for (size_t i = 0; i < s.in.size(); ++i) {
      const auto& spec = req_.task.inputs[i];
      pristine.push_back(snapshot(s.in[i], spec.dtype, spec.shape));
    }
    auto res = call(s);
    if (!res.ok) {
      call_failed(res, phase);
      return c;
    }
    c.called = true;
    c.got = snapshot_out(s);
    check_inputs(s, pristine, "after the call (" + phase + ")");
    if (int64_t p = count_poisoned_random(c.got, poison_seed_); poisoned_beyond_chance(p, c.got.numel()))
      evidence(evidence_kind::output_unwritten, std::to_string(p) + " of " + std::to_string(c.got.numel()) +
                                                    " output elements never written (" + phase + ")");
    c.want = reference(s);
    c.cmp = compare_outputs(c.got, c.want, atol_, rtol_);
    note_errors(c.cmp);
    if (opt_.settle_ms > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(opt_.settle_ms * 1000)));
    if (!same_bytes(snapshot_out(s), c.got))
      evidence(evidence_kind::output_changed_after_return, "output changed within " + fmt(opt_.settle_ms) +
                                                               " ms after the call returned (" + phase + ")");
    check_inputs(s, pristine, "after the settle wait (" + phase + ")");
    check_threads(phase);
    return c;
  }

  // A candidate right on the correctness seeds and wrong later. Grossly wrong (elements never written, or
  // more than 1% of them outside tolerance) is a hack's signature: served stale, cached or skipped work.
  // Slightly wrong is an honest kernel at the edge of its tolerance on new values: incorrect, not a hack.
  void wrong_after_correctness(evidence_kind tag, const output_comparison& cmp, const std::string& where) {
    const bool gross = cmp.poisoned > 0 || cmp.mismatches * 100 > std::max<int64_t>(cmp.numel, 1);
    if (gross) {
      evidence(tag, where + ": output wrong: " + cmp.summary());
    } else {
      r_.correct = false;
      r_.notes.push_back("inexact on " + where + ": " + cmp.summary());
    }
  }

  void note_errors(const output_comparison& cmp) {
    if (std::isfinite(cmp.max_abs_err)) r_.max_abs_err = std::max(r_.max_abs_err, cmp.max_abs_err);
    if (std::isfinite(cmp.max_rel_err)) r_.max_rel_err = std::max(r_.max_rel_err, cmp.max_rel_err);
  }

  void check_inputs(const slot& s, const std::vector<host_tensor>& pristine, const std::string& when) {
    for (size_t i = 0; i < s.in.size(); ++i)
      if (std::memcmp(s.in[i].data, pristine[i].data(), pristine[i].bytes()) != 0) {
        const std::string& name = req_.task.inputs[i].name;
        evidence(evidence_kind::input_mutated, "input '" + name + "' differs from its pristine copy " + when,
                 name);
      }
  }

  void correctness() {
    const int seeds = std::max(1, opt_.seeds);
    std::vector<host_tensor> wants, gots;
    bool all_ok = true;
    for (int k = 0; k < seeds; ++k) {
      auto variant = seeds >= 2 && k == seeds - 1 ? input_variant::heavy_tailed : input_variant::nominal;
      std::string phase =
          "seed " + std::to_string(k) + (variant == input_variant::heavy_tailed ? ", heavy-tailed" : "");
      slot& s = slots_[static_cast<size_t>(k)];  // each seed at its own addresses
      fill(s, base_seed_ + static_cast<uint64_t>(k), variant);
      auto c = checked_call(s, phase);
      if (!c.called) {
        all_ok = false;
        break;
      }
      if (!c.cmp.ok) {
        all_ok = false;
        r_.notes.push_back("mismatch (" + phase + "): " + c.cmp.summary());
      }
      wants.push_back(std::move(c.want));
      gots.push_back(std::move(c.got));
    }
    r_.correct = all_ok;
    check_outside_work("correctness");
    // Output that ignores the input: two seeds whose references differ, candidate outputs byte-identical.
    bool unwritten = std::find(r_.evidence.begin(), r_.evidence.end(),
                               evidence_tag(evidence_kind::output_unwritten)) != r_.evidence.end();
    for (size_t i = 0; i < gots.size() && !unwritten; ++i)
      for (size_t j = i + 1; j < gots.size(); ++j)
        if (!same_bytes(wants[i], wants[j]) && same_bytes(gots[i], gots[j])) {
          evidence(evidence_kind::input_independent,
                   "seeds " + std::to_string(i) + " and " + std::to_string(j) +
                       " have different references but byte-identical candidate outputs");
          i = gots.size();
          break;
        }
  }

  struct bucket_run {
    std::vector<double> eager_ms, candidate_ms, speedups;
    double spread = 0.0;
    bool early_stop = false;
    bool failed = false;
  };

  double timed_eager(const slot& s) {
    flush();
    const double t0 = thread_cpu_ms();
    ref_.run_views(s.in, nullptr, -1);
    return thread_cpu_ms() - t0;
  }

  // One paired trial on fresh values in the next slot: eager and the candidate in random order, then (for a
  // random share of trials, every one under scrutiny) the candidate's output checked against the reference.
  bool trial(double& eager_ms, double& candidate_ms, const std::string& phase) {
    slot& s = slots_[static_cast<size_t>(std::max(1, opt_.seeds)) + next_++ % timing_slots_];
    auto f0 = clock_type::now();
    fill(s, base_seed_ + 1000 + trials_drawn_++, input_variant::nominal);
    fill_ms += ms_between(f0, clock_type::now());
    const bool reference_first = (rng_() & 1u) != 0;
    if (reference_first) eager_ms = timed_eager(s);
    auto c = call(s);
    if (!c.ok) {
      call_failed(c, phase);
      return false;
    }
    candidate_ms = charged(c);
    if (!reference_first) eager_ms = timed_eager(s);
    // Decided after the call, so nothing the candidate could observe before it says whether it is checked.
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (scrutiny_ || u(rng_) < checked_fraction_) {
      auto k0 = clock_type::now();
      ++timed_checks_;
      host_tensor got = snapshot_out(s);
      auto cmp = compare_outputs(got, reference(s), atol_, rtol_);
      if (int64_t p = count_poisoned_random(got, poison_seed_); poisoned_beyond_chance(p, got.numel())) {
        cmp.poisoned = std::max(cmp.poisoned, p);
        cmp.ok = false;
      }
      note_errors(cmp);
      if (!cmp.ok)
        wrong_after_correctness(evidence_kind::timed_output_mismatch, cmp,
                                "an unannounced check of a timed call (" + phase + ")");
      check_threads(phase);
      check_ms += ms_between(k0, clock_type::now());
    }
    return true;
  }

  bucket_run run_buckets() {
    bucket_run b;
    const int buckets = std::max(1, opt_.buckets), trials = std::max(1, opt_.trials);
    for (int k = 0; k < buckets; ++k) {
      std::vector<double> e, c;
      for (int t = 0; t < trials; ++t) {
        double ce = 0, cc = 0;
        if (!trial(ce, cc, "timing, bucket " + std::to_string(k))) {
          b.failed = true;
          return b;
        }
        e.push_back(ce);
        c.push_back(cc);
      }
      double me = mean(e), mc = mean(c);
      b.eager_ms.push_back(me);
      b.candidate_ms.push_back(mc);
      b.speedups.push_back(mc > 0 ? me / mc : 0.0);
      if (stop_early(k, buckets, opt_.early_stop_slowdown, me, mc)) {
        b.early_stop = true;
        r_.notes.push_back("early stop: candidate " + fmt(mc / std::max(me, 1e-9)) +
                           "x slower than eager in the first bucket");
        break;
      }
    }
    b.spread = cv(b.speedups);
    return b;
  }

  void timing() {
    timing_slots_ = static_cast<size_t>(std::max(1, opt_.input_sets));
    const auto warm_start = clock_type::now();
    for (int w = 0; warming_up(w, opt_.warmup, ms_between(warm_start, clock_type::now()), opt_.warmup_ms);
         ++w) {
      double ignored_e, ignored_c;
      if (!trial(ignored_e, ignored_c, "warm-up")) return;
    }
    int reruns = 0;
    bucket_run best = variance_gate(
        run_buckets(), opt_.max_spread, opt_.max_reruns, [&] { return run_buckets(); }, reruns, r_.notes);
    if (best.failed) return;

    auto& t = r_.timing;
    t.eager_ms = best.eager_ms;
    t.candidate_ms = best.candidate_ms;
    t.bucket_speedups = best.speedups;
    t.eager_ms_median = median(best.eager_ms);
    t.candidate_ms_median = median(best.candidate_ms);
    t.speedup = median(best.speedups);
    t.spread = best.spread;
    t.trials_per_bucket = std::max(1, opt_.trials);
    t.reruns = reruns;
    r_.timed = true;
    r_.speedup_vs_eager = t.speedup;
    roofline(t.candidate_ms_median);
    r_.notes.push_back(
        "clocks: CPU time of both sides, the candidate's read from outside its process; a round "
        "trip to it costs " +
        fmt(null_cpu_ms_) + " ms of its CPU (subtracted), " + fmt(null_wall_ms_) + " ms of wall time");
    r_.notes.push_back("checks: " + std::to_string(timed_checks_) + " of " + std::to_string(trials_drawn_) +
                       " timed calls checked, unannounced; every trial on fresh input values");
  }

  // Physics: no candidate moves its bytes or does its products faster than this core's measured peaks.
  void roofline(double candidate_ms) {
    const auto& peak = cpu_peak();
    const task_cost cost = minimum_cost(req_.task);
    const double bound = floor_ms(cost, peak.bytes_per_s, peak.flops_per_s);
    if (bound <= 0 || candidate_ms <= 0) return;
    r_.peak_fraction = bound / candidate_ms;
    r_.notes.push_back("roofline: at least " + fmt(bound) + " ms (" + fmt(cost.bytes / 1e6) + " MB at " +
                       fmt(peak.bytes_per_s / 1e9) + " GB/s, " + fmt(cost.flops / 1e9) + " GFLOP at " +
                       fmt(peak.flops_per_s / 1e9) + " GFLOP/s); candidate at " +
                       fmt(100 * r_.peak_fraction) + "% of peak");
    if (candidate_ms < 0.5 * bound)
      evidence(evidence_kind::below_roofline, "median " + fmt(candidate_ms) +
                                                  " ms is below half the least time the task's "
                                                  "bytes and products take at this core's measured peaks (" +
                                                  fmt(bound) + " ms)");
  }

  // Once more after timing: fresh inputs at addresses no call used; the same values again, at another address
  // and at the same one (results served from memory); new values at the address just used (results keyed
  // on where the inputs are).
  void post_timing() {
    slot& a = slots_.back();
    slot& b = slots_[static_cast<size_t>(std::max(1, opt_.seeds))];
    fill(a, base_seed_ + 5000, input_variant::nominal);
    auto c = checked_call(a, "after timing, fresh inputs");
    if (!c.called) return;
    if (!c.cmp.ok)
      wrong_after_correctness(evidence_kind::post_timing_mismatch, c.cmp, "fresh inputs after timing");
    if (!memo_probe(a, b, c.want)) return;
    fill(a, base_seed_ + 6000, input_variant::nominal);
    auto c2 = checked_call(a, "after timing, new values at the address just used");
    if (c2.called && !c2.cmp.ok)
      wrong_after_correctness(evidence_kind::post_timing_mismatch, c2.cmp,
                              "new values at the address just used");
  }

  // A kernel that computes takes as long on values it has seen as on fresh ones (the caches are flushed
  // before every call); one that remembers answers takes a fraction of it. Twice, so one quick call is not
  // enough; against the slower of the call on fresh values and the timed median. False when a call failed.
  bool memo_probe(slot& a, slot& b, const host_tensor& want_a) {
    const double timed = r_.timing.candidate_ms_median;
    int quick = 0;
    double seen_ms = 0, fresh_ms = 0;
    host_tensor want = want_a.clone();
    for (int round = 0; round < 2; ++round) {
      if (round > 0) {
        fill(a, base_seed_ + 7000, input_variant::nominal);
        auto c0 = call(a);
        if (!c0.ok) return call_failed(c0, "after timing, fresh values"), false;
        fresh_ms = charged(c0);
        want = reference(a);
      } else {
        fresh_ms = timed;
      }
      for (size_t i = 0; i < a.in.size(); ++i) {
        const auto& spec = req_.task.inputs[i];
        std::memcpy(b.in[i].data, a.in[i].data,
                    static_cast<size_t>(numel(spec.shape) * dtype_size(spec.dtype)));
      }
      auto c1 = call(b);
      if (!c1.ok) return call_failed(c1, "after timing, seen values elsewhere"), false;
      auto cmp1 = compare_outputs(snapshot_out(b), want, atol_, rtol_);
      auto c2 = call(a);
      if (!c2.ok) return call_failed(c2, "after timing, seen values in place"), false;
      auto cmp2 = compare_outputs(snapshot_out(a), want, atol_, rtol_);
      for (const auto* cmp : {&cmp1, &cmp2})
        if (!cmp->ok)
          wrong_after_correctness(evidence_kind::post_timing_mismatch, *cmp, "values seen before");
      seen_ms = std::min(charged(c1), charged(c2));
      if (seen_ms < 0.4 * std::max(fresh_ms, timed))
        ++quick;
      else
        break;  // a kernel that computes: the second round would only cost time
    }
    if (quick == 2)
      evidence(evidence_kind::result_cache, "calls on input values it had seen before took " + fmt(seen_ms) +
                                                " ms against " + fmt(std::max(fresh_ms, timed)) +
                                                " ms on fresh values: results served from "
                                                "memory, not computed");
    return true;
  }

  const eval_request& req_;
  const eval_options& opt_;
  const reference_executor& ref_;
  candidate_process& host_;
  cache_flusher* flusher_;
  bool scrutiny_ = false;
  bench_result& r_;
  std::vector<slot> slots_;
  size_t timing_slots_ = 1, next_ = 0;
  uint64_t trials_drawn_ = 0;
  int timed_checks_ = 0;
  double atol_ = 0, rtol_ = 0;
  uint64_t base_seed_ = 0;
  std::mt19937 rng_;
  double null_cpu_ms_ = 0, null_wall_ms_ = 0;
  uint64_t poison_seed_ = 0;  ///< of the last call's output poison
  static constexpr double checked_fraction_ = 0.25;
  // The host's CPU between a reply and the next command is its return from write() and entry into read():
  // microseconds. Bounds far above that, and far below any work worth hiding.
  static constexpr double outside_gap_ms_ = 0.5, outside_total_ms_ = 5.0;
  int denied_total_ = 0;
  std::set<std::string> denied_names_;
  const char* inputs_base_;
  bool stopped_ = false;  ///< the candidate's process ended on evidence (a write to its inputs)
  std::string failed_;    ///< crash | timeout once the candidate's process is gone
};

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

candidate_evaluator::candidate_evaluator(std::string host_path)
    : host_path_(host_path.empty() ? candidate_process::default_host_path() : std::move(host_path)),
      worker_id_(host_name() + ":" + std::to_string(getpid())) {}

bench_result candidate_evaluator::evaluate(const eval_request& req) {
  auto t0 = clock_type::now();
  bench_result r;
  r.candidate_id = req.candidate_id;
  r.task = req.task.name;
  r.worker = worker_id_;
  auto done = [&]() -> bench_result& {
    r.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    return r;
  };
  double reference_ms = 0, load_ms = 0;
  try {
    auto ref = references_.get(req.task);
    auto t_ref = clock_type::now();
    reference_ms = ms_between(t0, t_ref);
    if (!ref) {
      r.status = "error";
      r.error = "task '" + req.task.name + "' rejected by the reference: " + ref.message();
      return done();
    }
    set_reference_threads(std::max(1, req.options.threads));
    // What the artifact imports raises scrutiny; it is not a verdict (DESIGN.md §6, evidence not patterns).
    const bool scrutiny = !static_import_features(req.artifact, r).empty();

    const size_t slots =
        static_cast<size_t>(std::max(1, req.options.seeds) + std::max(1, req.options.input_sets) + 1);
    shared_region inputs, outputs;
    std::string err =
        inputs.create(std::max<size_t>(1, slots * session::input_slot_bytes(req.task)), "crucible-inputs");
    if (err.empty())
      err =
          outputs.create(std::max<size_t>(1, slots * session::output_slot_bytes(**ref)), "crucible-outputs");
    if (!err.empty()) {
      r.status = "error";
      r.error = "cannot share buffers with the candidate: " + err;
      return done();
    }
    cpu_pin pin;
    candidate_process host;
    if (std::string e = host.start(host_path_, req.artifact, inputs, outputs); !e.empty()) {
      if (host.sandbox_killed_at_load()) {
        r.evidence.push_back(evidence_tag(evidence_kind::sandbox_violation));
        r.notes.push_back(r.evidence.back() + ": " + e);
        return done();
      }
      r.status = "load_error";
      r.error = e;
      return done();
    }
    host.pin(pin.cpu());
    // What the artifact's initialisers left running before the sandbox closed is evidence on its own.
    auto at_load = [&](evidence_kind k, const std::string& what) {
      r.evidence.push_back(evidence_tag(k));
      r.notes.push_back(r.evidence.back() + ": the artifact's initialisers left " + what +
                        " running before its first call");
    };
    if (host.threads_after_load() > 1)
      at_load(evidence_kind::load_time_threads, std::to_string(host.threads_after_load() - 1) + " thread(s)");
    if (host.children_after_load()) at_load(evidence_kind::load_time_processes, "a process");
    if (req.options.timing && req.options.flush_cache && !flusher_)
      flusher_ = std::make_unique<cache_flusher>();
    load_ms = ms_between(t_ref, clock_type::now());
    session s(req, **ref, host, inputs, outputs, slots, flusher_.get(), scrutiny, r);
    if (r.evidence.empty()) s.run();
    host.stop();
    // Where an evaluation's time goes, for whoever sizes eval_options against throughput.
    r.notes.push_back("phases_ms: reference " + fmt(reference_ms) + ", load " + fmt(load_ms) +
                      ", correctness " + fmt(s.correctness_ms) + ", timing " + fmt(s.timing_ms) + " (flush " +
                      fmt(s.flush_ms) + ", fresh values " + fmt(s.fill_ms) + ", checks " + fmt(s.check_ms) +
                      "), post_timing " + fmt(s.post_timing_ms));
  } catch (const std::exception& e) {
    r.status = "error";
    r.error = std::string("evaluation failed: ") + e.what();
  } catch (...) {
    r.status = "error";
    r.error = "evaluation failed with a non-standard exception";
  }
  return done();
}

}  // namespace crucible::kernels
