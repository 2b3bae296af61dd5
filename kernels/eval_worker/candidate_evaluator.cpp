#include "kernels/eval_worker/candidate_evaluator.hpp"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "kernels/abi/crucible_abi.h"
#include "kernels/eval/timing_stats.hpp"
#include "kernels/eval_worker/candidate_process.hpp"
#include "kernels/eval_worker/evaluation_protocol.hpp"
#include "kernels/eval_worker/loaded_candidate.hpp"
#include "kernels/eval_worker/machine_peak.hpp"
#include "kernels/reference/output_check.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"
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

// The CPU target's way of doing each step of the protocol (evaluation_protocol.hpp): slots in the regions
// shared with the candidate's sealed process, its calls timed as that process's CPU time read from outside,
// the reference run here, in the worker, where the candidate cannot reach it.
class cpu_backend final : public device_backend {
 public:
  cpu_backend(const eval_request& req, const reference_model& ref, candidate_process& host,
              const shared_region& inputs, const shared_region& outputs, size_t slots, cache_flusher* flusher,
              bench_result& out)
      : req_(req),
        opt_(req.options),
        ref_(ref),
        host_(host),
        flusher_(flusher),
        r_(out),
        inputs_base_(inputs.base()) {
    atol_ = task_atol(req.task);
    rtol_ = task_rtol(req.task);
    std::random_device rd;
    rng_.seed(rd());
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
  static size_t output_slot_bytes(const reference_model& ref) {
    return aligned(static_cast<size_t>(numel(ref.output_shape()) * dtype_size(ref.output_dtype())));
  }

  double flush_ms = 0;  ///< evicting caches before calls

  size_t slots() const override { return slots_.size(); }
  bool halted() const override { return stopped_ || r_.status != "ok" || !r_.error.empty(); }
  bool candidate_first() const override { return false; }  // the reference runs here, out of its reach
  device_peaks peaks() const override {
    const auto& p = cpu_peak();
    return {p.bytes_per_s, p.flops_per_s, "this core"};
  }
  device_peaks peaks_again() override {
    const auto& p = cpu_peak(/*again=*/true);
    return {p.bytes_per_s, p.flops_per_s, "this core"};
  }
  task_cost minimum_cost() const override { return ref_.minimum_cost(); }
  bool has_baseline(baseline b, size_t) const override { return b == baseline::eager; }

  void fill(size_t k, uint64_t seed, input_variant variant) override {
    ref_.fill_inputs(slots_[k].in, seed, variant, -1);
  }

  void copy_inputs(size_t from, size_t to) override {
    for (size_t i = 0; i < slots_[from].in.size(); ++i) {
      const auto& spec = req_.task.inputs[i];
      std::memcpy(slots_[to].in[i].data, slots_[from].in[i].data,
                  static_cast<size_t>(numel(spec.shape) * dtype_size(spec.dtype)));
    }
  }

  // The host's own cost of a round trip (the pipe, the wake-up), subtracted from every timed call.
  bool calibrate() override {
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

  // One checked call on slot k (values already drawn): the reference runs only after the candidate returned.
  checked_outcome checked_call(size_t k, const std::string& phase) override {
    checked_outcome c;
    slot& s = slots_[k];
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
    host_tensor got = snapshot_out(s);
    check_inputs(s, pristine, "after the call (" + phase + ")");
    if (int64_t p = count_poisoned_random(got, poison_seed_); poisoned_beyond_chance(p, got.numel()))
      add_evidence(r_, evidence_kind::output_unwritten,
                   std::to_string(p) + " of " + std::to_string(got.numel()) +
                       " output elements never written (" + phase + ")");
    host_tensor want = reference(s);
    c.cmp = compare_outputs(got, want, atol_, rtol_);
    c.got_digest = bytes_digest(got.data(), got.bytes());
    c.want_digest = bytes_digest(want.data(), want.bytes());
    if (opt_.settle_ms > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(opt_.settle_ms * 1000)));
    if (!same_bytes(snapshot_out(s), got))
      add_evidence(r_, evidence_kind::output_changed_after_return,
                   "output changed within " + fmt_number(opt_.settle_ms) + " ms after the call returned (" +
                       phase + ")");
    check_inputs(s, pristine, "after the settle wait (" + phase + ")");
    check_threads(phase);
    return c;
  }

  double timed_call(size_t k, timed_use, const std::string& phase) override {
    auto c = call(slots_[k]);
    if (!c.ok) {
      call_failed(c, phase);
      return -1;
    }
    return charged(c);
  }

  double timed_baseline(baseline, size_t k, const std::string&) override {
    flush();
    // A KernelBench candidate returns a new tensor, which its host copies into the output region (the ABI);
    // the reference's eager call makes the same copy, into a buffer of its own written just before as the
    // candidate's output is poisoned, so both sides do the same work (without it, an A/A run measured ReLU
    // at 0.6x of itself).
    cru_tensor out_view{};
    const cru_tensor* out = nullptr;
    if (!req_.task.module.empty()) {
      if (baseline_out_.empty()) baseline_out_ = ref_.make_output();
      poison_random(baseline_out_.data(), ref_.output_dtype(), baseline_out_.numel(), rng_());
      out_view = baseline_out_.view();
      out = &out_view;
    }
    const double t0 = thread_cpu_ms();
    ref_.run_views(slots_[k].in, out, -1);
    return thread_cpu_ms() - t0;
  }

  output_comparison check_output(size_t k, const std::string& phase) override {
    slot& s = slots_[k];
    host_tensor got = snapshot_out(s);
    auto cmp = compare_outputs(got, reference(s), atol_, rtol_);
    if (int64_t p = count_poisoned_random(got, poison_seed_); poisoned_beyond_chance(p, got.numel())) {
      cmp.poisoned = std::max(cmp.poisoned, p);
      cmp.ok = false;
    }
    check_threads(phase);
    return cmp;
  }

  bool prepare_timing(size_t, size_t) override { return true; }

  void timing_done() override {
    r_.notes.push_back(
        "clocks: CPU time of both sides, the candidate's read from outside its process; a round "
        "trip to it costs " +
        fmt_number(null_cpu_ms_) + " ms of its CPU (subtracted), " + fmt_number(null_wall_ms_) +
        " ms of wall time");
  }

  void correctness_done() override { check_outside_work("correctness"); }

  void finish() override {
    if (!halted()) check_outside_work("whole evaluation");
    note_outside_work();
    if (denied_total_ > 0)
      r_.notes.push_back("sandbox: refused " + std::to_string(denied_total_) +
                         " system call(s) of the candidate (" + join_denied() + "); each failed with EPERM");
  }

 private:
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
  // place, the caches flushed, the output poisoned afresh, the same command. What happens after it is the
  // worker's.
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
      add_evidence(r_, evidence_kind::process_probe,
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
    add_evidence(
        r_, evidence_kind::sandbox_violation,
        "the candidate's process attempted system calls its sandbox refuses (" + join_denied() + ")");
  }

  // Records a failed call: a crash or hang ends the evaluation with that status; a write to the inputs
  // (which fault in the candidate's process) is the evidence it is.
  void call_failed(const candidate_call& c, const std::string& phase) {
    if (c.sandbox_killed) {
      add_evidence(r_, evidence_kind::sandbox_violation, c.error + " (" + phase + ")");
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
      add_evidence(r_, evidence_kind::input_mutated,
                   "the candidate wrote to input '" + name + "' (" + phase +
                       "); inputs are read-only in its process, so the write faulted",
                   name);
      stopped_ = true;
      return;
    }
    if (c.disguised_output) {
      add_disguised_output(r_, c.error + " (" + phase + ")");
      stopped_ = true;
      return;
    }
    r_.error = c.error + " (" + phase + ")";
    if (c.crashed) r_.status = "crash";
    if (c.hung) r_.status = "timeout";
  }

  double charged(const candidate_call& c) const { return std::max(c.cpu_ms - null_cpu_ms_, 1e-6); }

  // All work counts: the host must be idle between calls. CPU time there means work no call was charged
  // for (a thread, a handler, a loop that answers before it computes). Work hidden there to win the timing
  // recurs with every call it speeds up, so it shows in many gaps; a single long gap is the machine's doing
  // (an interrupt or the hypervisor's steal charged to whatever ran), and is never evidence on its own.
  size_t busy_gaps() const {
    const auto& gaps = host_.outside_gaps_ms();
    return static_cast<size_t>(
        std::count_if(gaps.begin(), gaps.end(), [](double g) { return g > outside_gap_ms_; }));
  }

  void check_outside_work(const std::string& phase) {
    const auto& gaps = host_.outside_gaps_ms();
    const size_t busy = busy_gaps();
    if (busy >= outside_busy_min_ && busy * outside_busy_share_ >= gaps.size())
      add_evidence(r_, evidence_kind::work_outside_calls,
                   "the candidate's process used CPU between calls, where it should wait for the next one: " +
                       std::to_string(busy) + " of " + std::to_string(gaps.size()) + " gaps above " +
                       fmt_number(outside_gap_ms_) + " ms, " + fmt_number(host_.outside_cpu_ms()) +
                       " ms in all, at most " + fmt_number(host_.max_outside_cpu_ms()) + " ms at once (" +
                       phase + ")");
  }

  void note_outside_work() {
    r_.notes.push_back("between calls: " + fmt_number(host_.outside_cpu_ms()) +
                       " ms of the candidate's CPU over " + std::to_string(host_.outside_gaps_ms().size()) +
                       " gaps, at most " + fmt_number(host_.max_outside_cpu_ms()) + " ms at once, " +
                       std::to_string(busy_gaps()) + " above " + fmt_number(outside_gap_ms_) + " ms");
  }

  void check_threads(const std::string& phase) {
    int t = host_.threads();
    if (t > 1)
      add_evidence(r_, evidence_kind::threads_left_running,
                   std::to_string(t) + " threads in the candidate's process after a call (" + phase + ")");
  }

  void check_inputs(const slot& s, const std::vector<host_tensor>& pristine, const std::string& when) {
    for (size_t i = 0; i < s.in.size(); ++i)
      if (std::memcmp(s.in[i].data, pristine[i].data(), pristine[i].bytes()) != 0) {
        const std::string& name = req_.task.inputs[i].name;
        add_evidence(r_, evidence_kind::input_mutated,
                     "input '" + name + "' differs from its pristine copy " + when, name);
      }
  }

  const eval_request& req_;
  const eval_options& opt_;
  const reference_model& ref_;
  candidate_process& host_;
  host_tensor baseline_out_;  ///< where a KernelBench reference copies its result when timed
  cache_flusher* flusher_;
  bench_result& r_;
  std::vector<slot> slots_;
  double atol_ = 0, rtol_ = 0;
  std::mt19937 rng_;
  double null_cpu_ms_ = 0, null_wall_ms_ = 0;
  uint64_t poison_seed_ = 0;  ///< of the last call's output poison
  // The host's CPU between a reply and the next command is its return from write() and entry into read():
  // microseconds. A gap far above that is busy; evidence takes at least 3 busy gaps and a quarter of all.
  static constexpr double outside_gap_ms_ = 0.1;
  static constexpr size_t outside_busy_min_ = 3, outside_busy_share_ = 4;
  int denied_total_ = 0;
  std::set<std::string> denied_names_;
  const char* inputs_base_;
  bool stopped_ =
      false;  ///< the candidate's process ended on evidence (a write to its inputs, a refused call)
};

// A KernelBench problem's source in a file of one evaluation, removed with it.
class problem_file {
 public:
  problem_file() = default;
  problem_file(const problem_file&) = delete;
  problem_file& operator=(const problem_file&) = delete;
  ~problem_file() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  std::string write(const task_spec& task) {
    static int made = 0;
    std::error_code ec;
    auto dir = std::filesystem::temp_directory_path(ec);
    if (ec) dir = "/tmp";
    path_ = (dir / ("crucible-problem-" + std::to_string(getpid()) + "-" + std::to_string(made++) + ".py"))
                .string();
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << task.module;
    if (!out.flush()) return "cannot write the problem's module to " + path_;
    return {};
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

candidate_evaluator::candidate_evaluator(std::string host_path)
    : host_path_(host_path.empty() ? candidate_process::default_host_path() : std::move(host_path)),
      kernelbench_host_path_(candidate_process::kernelbench_host_path()),
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
    auto ref = references_.get_model(req.task);
    auto t_ref = clock_type::now();
    reference_ms = ms_between(t0, t_ref);
    if (!ref) {
      r.status = "error";
      r.error = "task '" + req.task.name + "' rejected by the reference: " + ref.message();
      return done();
    }
    set_reference_threads(std::max(1, req.options.threads));
    // What the artifact imports raises scrutiny; it is not a verdict (DESIGN.md §6, evidence not patterns).
    // A KernelBench candidate is Python, run by the KernelBench host: its imports are the interpreter's.
    const bool kernelbench = !req.task.module.empty();
    const bool scrutiny = !kernelbench && !static_import_features(req.artifact, r).empty();

    const size_t slots = evaluation_protocol::slots_needed(req.options);
    shared_region inputs, outputs;
    std::string err = inputs.create(std::max<size_t>(1, slots * cpu_backend::input_slot_bytes(req.task)),
                                    "crucible-inputs");
    if (err.empty())
      err = outputs.create(std::max<size_t>(1, slots * cpu_backend::output_slot_bytes(**ref)),
                           "crucible-outputs");
    if (!err.empty()) {
      r.status = "error";
      r.error = "cannot share buffers with the candidate: " + err;
      return done();
    }
    cpu_pin pin;
    candidate_process host;
    // The KernelBench host reads the problem's module (its get_init_inputs, and inputs for a warm-up pass)
    // from a file of this evaluation's own.
    problem_file problem;
    if (kernelbench) {
      if (std::string e = problem.write(req.task); !e.empty()) {
        r.status = "error";
        r.error = e;
        return done();
      }
    }
    const std::string& host_path = kernelbench ? kernelbench_host_path_ : host_path_;
    const std::vector<std::string> host_args =
        kernelbench ? std::vector<std::string>{problem.path()} : std::vector<std::string>{};
    if (std::string e = host.start(host_path, req.artifact, inputs, outputs, host_args); !e.empty()) {
      if (host.sandbox_killed_at_load()) {
        r.evidence.push_back(evidence_tag(evidence_kind::sandbox_violation));
        r.notes.push_back(r.evidence.back() + ": " + e);
        return done();
      }
      // The KernelBench host runs one forward pass while loading (lazy imports happen before the seal): a
      // signal there is the candidate's crash, as it would be in its first call.
      r.status = kernelbench && host.died_at_load() ? "crash" : "load_error";
      r.error =
          kernelbench && host.died_at_load() ? e + ", building ModelNew or in its first forward pass" : e;
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
    cpu_backend backend(req, **ref, host, inputs, outputs, slots, flusher_.get(), r);
    evaluation_protocol protocol(req, backend, scrutiny, r);
    if (r.evidence.empty()) protocol.run();
    host.stop();
    const auto& s = protocol.times();
    // Where an evaluation's time goes, for whoever sizes eval_options against throughput.
    r.notes.push_back("phases_ms: reference " + fmt_number(reference_ms) + ", load " + fmt_number(load_ms) +
                      ", correctness " + fmt_number(s.correctness) + ", timing " + fmt_number(s.timing) +
                      " (flush " + fmt_number(backend.flush_ms) + ", fresh values " + fmt_number(s.fill) +
                      ", checks " + fmt_number(s.check) + "), post_timing " + fmt_number(s.post_timing) +
                      " (memo probe " + fmt_number(s.memo) + ")");
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
