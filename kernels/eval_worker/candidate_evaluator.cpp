#include "kernels/eval_worker/candidate_evaluator.hpp"

#include <fenv.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "kernels/abi/crucible_abi.h"
#include "kernels/eval/timing_stats.hpp"
#include "kernels/eval_worker/loaded_candidate.hpp"
#include "kernels/eval_worker/process_probe.hpp"
#include "kernels/reference/output_check.hpp"
#include "kernels/task/chain_shapes.hpp"

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The floating-point control state a candidate could change to make later (reference) calls cheaper or
// different: rounding mode and, on x86, MXCSR's control bits (flush-to-zero, denormals-are-zero).
struct fp_state {
  int rounding = 0;
  unsigned mxcsr_control = 0;
  fenv_t env{};
  static fp_state capture() {
    fp_state s;
    s.rounding = fegetround();
#if defined(__x86_64__) || defined(__i386__)
    s.mxcsr_control = _mm_getcsr() & ~0x3Fu;  // without the sticky exception flags
#endif
    fegetenv(&s.env);
    return s;
  }
  bool same_control(const fp_state& o) const {
    return rounding == o.rounding && mxcsr_control == o.mxcsr_control;
  }
  void restore() const {
    fesetenv(&env);
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr((_mm_getcsr() & 0x3Fu) | mxcsr_control);
#endif
  }
};

struct call_result {
  bool ok = false;
  double ms = 0.0;
  std::string error;  ///< non-zero return or exception
};

// The per-request state and every check of the protocol.
class session {
 public:
  session(const eval_request& req, const reference_executor& ref, crucible_forward_fn fn,
          cache_flusher* flusher, bench_result& out)
      : req_(req), opt_(req.options), ref_(ref), fn_(fn), flusher_(flusher), r_(out) {
    atol_ = task_atol(req.task);
    rtol_ = task_rtol(req.task);
    ctx_.abi_version = CRUCIBLE_ABI_VERSION;
    ctx_.device = -1;
    std::random_device rd;
    base_seed_ = (uint64_t{rd()} << 32) ^ rd();
    rng_.seed(static_cast<uint32_t>(base_seed_ ^ (base_seed_ >> 32)));
    fp_baseline_ = fp_state::capture();
  }

  bool left_threads() const { return left_threads_; }

  /// Milliseconds spent in correctness, timing and post-timing checks.
  double correctness_ms = 0, timing_ms = 0, post_timing_ms = 0;
  double flush_ms = 0;  ///< part of timing_ms spent evicting caches
  int retaken = 0;      ///< paired trials re-taken because the thread was preempted inside a timed call
  static constexpr int max_retakes = 3;

  void run() {
    r_.notes.push_back("seed base " + std::to_string(base_seed_));
    auto t0 = clock_type::now();
    correctness();
    auto t1 = clock_type::now();
    correctness_ms = ms_between(t0, t1);
    if (!opt_.timing) return;
    if (!r_.correct || !r_.evidence.empty() || !r_.error.empty()) {
      r_.notes.push_back("timing skipped: " + std::string(!r_.correct         ? "incorrect"
                                                          : !r_.error.empty() ? "call failed"
                                                                              : "hack evidence"));
      return;
    }
    timing();
    auto t2 = clock_type::now();
    timing_ms = ms_between(t1, t2);
    if (r_.error.empty()) post_timing();
    post_timing_ms = ms_between(t2, clock_type::now());
  }

 private:
  void evidence(const std::string& tag, const std::string& note) {
    if (std::find(r_.evidence.begin(), r_.evidence.end(), tag) == r_.evidence.end()) {
      r_.evidence.push_back(tag);
      r_.notes.push_back(tag + ": " + note);
    }
  }

  call_result call(const std::vector<host_tensor>& inputs, host_tensor& out) {
    std::vector<cru_tensor> in(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i].view();
    cru_tensor o = out.view();
    call_result res;
    int rc = -1;
    auto t0 = clock_type::now();
    try {
      rc = fn_(&ctx_, in.data(), static_cast<int32_t>(in.size()), &o, 1);
    } catch (const std::exception& e) {
      res.error = std::string("candidate threw: ") + e.what();
    } catch (...) {
      res.error = "candidate threw a non-standard exception";
    }
    auto t1 = clock_type::now();
    res.ms = ms_between(t0, t1);
    if (res.error.empty() && rc != 0) res.error = "crucible_forward returned " + std::to_string(rc);
    res.ok = res.error.empty();
    check_fp_state();
    return res;
  }

  void check_fp_state() {
    auto now = fp_state::capture();
    if (!now.same_control(fp_baseline_)) {
      evidence("fp_env_changed", "the candidate changed the rounding mode or MXCSR (FTZ/DAZ) and left it so");
      fp_baseline_.restore();
    }
  }

  std::vector<host_tensor> clone_all(const std::vector<host_tensor>& v) {
    std::vector<host_tensor> out;
    out.reserve(v.size());
    for (const auto& t : v) out.push_back(t.clone());
    return out;
  }

  void check_inputs(const std::vector<host_tensor>& inputs, const std::vector<host_tensor>& pristine,
                    const std::string& when) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!same_bytes(inputs[i], pristine[i])) {
        const std::string& name = i < req_.task.inputs.size() ? req_.task.inputs[i].name : std::to_string(i);
        evidence("input_mutated:" + name, "input '" + name + "' differs from its pristine copy " + when);
      }
  }

  struct checked {
    bool called = false;  ///< the call returned 0
    output_comparison cmp;
    host_tensor got;   ///< the output as it was when the call returned
    host_tensor want;  ///< the reference's output for the same inputs
  };

  // One checked call on `inputs`: everything the verifier needs to tell a wrong answer from a hack. The
  // reference runs only after the candidate returned (on the pristine copies), so no reference output for
  // these inputs exists anywhere in this process while the candidate runs. `phase` names the check in notes.
  checked checked_call(std::vector<host_tensor>& inputs, host_tensor& out, const std::string& phase) {
    checked c;
    auto pristine = clone_all(inputs);
    poison(out);
    int threads_before = thread_count();
    auto res = call(inputs, out);
    int threads_returned = thread_count();
    c.got = out.clone();
    if (!res.ok) {
      r_.error = res.error + " (" + phase + ")";
      return c;
    }
    c.called = true;
    check_inputs(inputs, pristine, "after the call (" + phase + ")");
    if (int64_t p = count_poisoned(c.got); p > 0)
      evidence("output_unwritten", std::to_string(p) + " of " + std::to_string(c.got.numel()) +
                                       " output elements never written (" + phase + ")");
    c.want = ref_.make_output();
    {
      auto copy = clone_all(pristine);  // the reference computes on copies: the pristine ones stay as drawn
      ref_.run(copy, c.want);
    }
    c.cmp = compare_outputs(c.got, c.want, atol_, rtol_);
    if (std::isfinite(c.cmp.max_abs_err)) r_.max_abs_err = std::max(r_.max_abs_err, c.cmp.max_abs_err);
    if (std::isfinite(c.cmp.max_rel_err)) r_.max_rel_err = std::max(r_.max_rel_err, c.cmp.max_rel_err);

    // Deferred work shows as outputs (or inputs) that change after the call returned, or threads that
    // outlive it.
    if (opt_.settle_ms > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(opt_.settle_ms * 1000)));
    if (!same_bytes(out, c.got))
      evidence("output_changed_after_return", "output changed within " + fmt(opt_.settle_ms) +
                                                  " ms after the call returned (" + phase + ")");
    check_inputs(inputs, pristine, "after the settle wait (" + phase + ")");
    int threads_settled = thread_count();
    if (threads_before >= 0 && (threads_returned > threads_before || threads_settled > threads_before)) {
      left_threads_ = true;
      evidence("threads_left_running", std::to_string(threads_before) + " threads before the call, " +
                                           std::to_string(threads_returned) + " when it returned, " +
                                           std::to_string(threads_settled) + " after " + fmt(opt_.settle_ms) +
                                           " ms (" + phase + ")");
    }
    return c;
  }

  void correctness() {
    int seeds = std::max(1, opt_.seeds);
    std::vector<std::vector<host_tensor>> kept_inputs;  // alive together, so every seed has new addresses
    std::vector<host_tensor> wants, gots;
    bool all_ok = true;
    for (int s = 0; s < seeds; ++s) {
      auto variant = seeds >= 2 && s == seeds - 1 ? input_variant::heavy_tailed : input_variant::nominal;
      std::string phase =
          "seed " + std::to_string(s) + (variant == input_variant::heavy_tailed ? ", heavy-tailed" : "");
      auto inputs = ref_.make_inputs(base_seed_ + static_cast<uint64_t>(s), variant);
      auto out = ref_.make_output();
      auto c = checked_call(inputs, out, phase);
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
      kept_inputs.push_back(std::move(inputs));
    }
    r_.correct = all_ok;

    // Output that ignores the input: two seeds whose references differ, candidate outputs byte-identical.
    bool unwritten =
        std::find(r_.evidence.begin(), r_.evidence.end(), "output_unwritten") != r_.evidence.end();
    for (size_t i = 0; i < gots.size() && !unwritten; ++i)
      for (size_t j = i + 1; j < gots.size(); ++j)
        if (!same_bytes(wants[i], wants[j]) && same_bytes(gots[i], gots[j])) {
          evidence("input_independent",
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

  struct timing_set {
    std::vector<host_tensor> inputs;
    host_tensor want;
    host_tensor out;
  };

  void flush() {
    if (!opt_.flush_cache || !flusher_) return;
    auto t0 = clock_type::now();
    flusher_->flush();
    flush_ms += ms_between(t0, clock_type::now());
  }

  double timed_reference(const timing_set& set, bool& preempted) {
    flush();
    long switches = involuntary_switches();
    double ms = ref_.run_timed(set.inputs);
    preempted = involuntary_switches() != switches;
    return ms;
  }

  // Returns false when the call failed (error recorded).
  bool timed_candidate(timing_set& set, double& ms, bool& preempted) {
    poison(set.out);
    flush();
    int before = thread_count();
    long switches = involuntary_switches();
    auto res = call(set.inputs, set.out);
    preempted = involuntary_switches() != switches;
    if (!res.ok) {
      r_.error = res.error + " (timing)";
      return false;
    }
    ms = res.ms;
    // Outside the clock: what was timed must be the whole, correct result, with no thread left behind.
    int after = thread_count();
    if (before >= 0 && after > before) {
      left_threads_ = true;
      evidence("threads_left_running",
               std::to_string(after - before) + " thread(s) still running after a timed call");
    }
    auto cmp = compare_outputs(set.out, set.want, atol_, rtol_);
    if (!cmp.ok)
      evidence("timed_output_mismatch",
               "a timed call's output did not match the reference: " + cmp.summary());
    return true;
  }

  bucket_run run_buckets(std::vector<timing_set>& pool, size_t& next) {
    bucket_run b;
    int buckets = std::max(1, opt_.buckets);
    int trials = std::max(1, opt_.trials);
    for (int k = 0; k < buckets; ++k) {
      std::vector<double> e, c;
      for (int t = 0; t < trials; ++t) {
        double ce = 0, cc = 0;
        for (int attempt = 0;; ++attempt) {
          timing_set& set = pool[next++ % pool.size()];
          bool reference_first = (rng_() & 1u) != 0;  // paired, in random order
          bool pre_e = false, pre_c = false;
          if (reference_first) ce = timed_reference(set, pre_e);
          if (!timed_candidate(set, cc, pre_c)) {
            b.failed = true;
            return b;
          }
          if (!reference_first) ce = timed_reference(set, pre_e);
          // Bounded per trial and per evaluation: on a saturated machine nearly every call is preempted,
          // and re-taking forever would only multiply the cost.
          if (!(pre_e || pre_c) || attempt == max_retakes || retaken >= buckets * trials) break;
          ++retaken;
        }
        e.push_back(ce);
        c.push_back(cc);
      }
      double me = mean(e), mc = mean(c);
      b.eager_ms.push_back(me);
      b.candidate_ms.push_back(mc);
      b.speedups.push_back(mc > 0 ? me / mc : 0.0);
      if (stop_early(k, buckets, opt_.early_stop_slowdown, me, mc)) {
        // A candidate this slow cannot win; stop before it eats the run's time.
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
    int sets = std::max(1, opt_.input_sets);
    std::vector<timing_set> pool(static_cast<size_t>(sets));
    for (int k = 0; k < sets; ++k) {
      auto& s = pool[static_cast<size_t>(k)];
      s.inputs = ref_.make_inputs(base_seed_ + 1000 + static_cast<uint64_t>(k), input_variant::nominal);
      s.want = ref_.make_output();
      auto copy = clone_all(s.inputs);
      ref_.run(copy, s.want);
      s.out = ref_.make_output();
    }
    size_t next = 0;
    const auto warm_start = clock_type::now();
    for (int w = 0; warming_up(w, opt_.warmup, ms_between(warm_start, clock_type::now()), opt_.warmup_ms);
         ++w) {
      timing_set& set = pool[next++ % pool.size()];
      ref_.run_timed(set.inputs);
      double ignored;
      bool preempted;
      if (!timed_candidate(set, ignored, preempted)) return;
    }

    int reruns = 0;
    bucket_run best = variance_gate(
        run_buckets(pool, next), opt_.max_spread, opt_.max_reruns, [&] { return run_buckets(pool, next); },
        reruns, r_.notes);
    if (best.failed) return;
    if (retaken > 0)
      r_.notes.push_back("preemption: " + std::to_string(retaken) +
                         " paired trial(s) re-taken (thread preempted inside a timed call)");

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
    pool_ = std::move(pool);
  }

  // Once more after timing: fresh inputs at fresh addresses, and fresh values at an address the timed calls
  // used (a result cached by pointer serves the stale answer there).
  void post_timing() {
    auto inputs = ref_.make_inputs(base_seed_ + 5000, input_variant::nominal);
    auto out = ref_.make_output();
    auto c = checked_call(inputs, out, "after timing, fresh inputs");
    if (c.called && !c.cmp.ok)
      evidence("post_timing_mismatch", "wrong on fresh inputs after timing: " + c.cmp.summary());
    if (!c.called || pool_.empty()) return;

    timing_set& reused = pool_.front();
    auto fresh = ref_.make_inputs(base_seed_ + 6000, input_variant::nominal);
    for (size_t i = 0; i < fresh.size() && i < reused.inputs.size(); ++i)
      std::memcpy(reused.inputs[i].data(), fresh[i].data(), fresh[i].bytes());
    reused.want = host_tensor();  // the stale reference for the old values goes too
    auto c2 = checked_call(reused.inputs, reused.out, "after timing, new values at a timed address");
    if (c2.called && !c2.cmp.ok)
      evidence("post_timing_mismatch",
               "stale result for new values at an input address used during timing "
               "(results cached by pointer?): " +
                   c2.cmp.summary());
  }

  const eval_request& req_;
  const eval_options& opt_;
  const reference_executor& ref_;
  crucible_forward_fn fn_;
  cache_flusher* flusher_;
  bench_result& r_;
  cru_context ctx_{};
  double atol_ = 0, rtol_ = 0;
  uint64_t base_seed_ = 0;
  std::mt19937 rng_;
  fp_state fp_baseline_;
  bool left_threads_ = false;
  std::vector<timing_set> pool_;
};

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

candidate_evaluator::candidate_evaluator() : worker_id_(host_name() + ":" + std::to_string(getpid())) {}

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

    loaded_candidate lib;
    if (std::string err = load_candidate(lib, req.artifact, loads_, r); !err.empty()) {
      r.status = "load_error";
      r.error = err;
      return done();
    }
    if (req.options.timing && req.options.flush_cache && !flusher_)
      flusher_ = std::make_unique<cache_flusher>();
    load_ms = ms_between(t_ref, clock_type::now());
    session s(req, **ref, lib.fn(), flusher_.get(), r);
    s.run();
    if (s.left_threads()) lib.leak();
    // Where an evaluation's time goes, for whoever sizes eval_options against throughput.
    r.notes.push_back("phases_ms: reference " + fmt(reference_ms) + ", load " + fmt(load_ms) +
                      ", correctness " + fmt(s.correctness_ms) + ", timing " + fmt(s.timing_ms) + " (flush " +
                      fmt(s.flush_ms) + "), post_timing " + fmt(s.post_timing_ms));
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
