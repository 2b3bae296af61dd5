#include "kernels/eval/worker_client.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/eval/frame_io.hpp"
#include "kernels/eval/subprocess.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/envelope.hpp"

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;
constexpr const char* worker_exe = "crucible-eval-worker";

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string p(buf, static_cast<size_t>(n));
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

// The worker: as configured; else $CRUCIBLE_EVAL_WORKER; else next to this executable or up to two levels
// above it (tests and tools live in subfolders of the build tree); else on PATH.
std::string resolve_worker_path(const std::string& configured, std::string& tried) {
  auto usable = [&](const std::string& p) {
    tried += (tried.empty() ? "" : ", ") + p;
    return !p.empty() && access(p.c_str(), X_OK) == 0;
  };
  if (!configured.empty()) return usable(configured) ? configured : std::string();
  if (const char* env = std::getenv("CRUCIBLE_EVAL_WORKER"); env && *env && usable(env)) return env;
  std::string dir = self_dir();
  if (!dir.empty())
    for (const char* rel : {"/", "/../", "/../../"})
      if (std::string p = dir + rel + worker_exe; usable(p)) return p;
  std::string on_path = find_executable(worker_exe);
  tried += std::string(tried.empty() ? "" : ", ") + "PATH";
  return on_path;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string fmt_s(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

// A started worker process and its pipes.
struct worker_process {
  pid_t pid = 0;
  int to = -1, from = -1;
  clock_type::time_point spawned{};
};

struct worker_client::impl {
  worker_options opt;
  std::atomic<pid_t> pid{0};  // read by pid() from any thread (a supervisor, a test that kills it)
  int to_worker = -1;
  int from_worker = -1;
  int starts = 0;
  double start_wait_s = 0;
  worker_process spare;  // the standby worker (pid 0: none)
  std::atomic<pid_t> spare_pid{0};
  std::string host = host_name();
  std::string path;        // the executable, once found
  std::string start_note;  // how the current worker's start went, said with its first result
  std::string ready_note;  // what the worker said of its start in "ready"
  bool modules = false;    // the last request was a KernelBench module: the next worker imports torch ahead

  status spawn(bool standby, worker_process& out) {
    if (path.empty()) {
      std::string tried;
      path = resolve_worker_path(opt.worker_path, tried);
      if (path.empty())
        return make_error("cannot find the eval worker executable '" + std::string(worker_exe) + "' (tried " +
                          tried + "); set worker.worker_path or CRUCIBLE_EVAL_WORKER");
    }
    int req[2], resp[2];
    if (pipe2(req, O_CLOEXEC) != 0) return make_error(std::string("pipe2: ") + std::strerror(errno));
    if (pipe2(resp, O_CLOEXEC) != 0) {
      close(req[0]);
      close(req[1]);
      return make_error(std::string("pipe2: ") + std::strerror(errno));
    }
    int log = opt.log_path.empty()
                  ? -1
                  : open(opt.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    spawn_spec spec;
    spec.argv = {path};
    if (opt.device >= 0) spec.argv.insert(spec.argv.end(), {"--device", std::to_string(opt.device)});
    if (standby) spec.argv.push_back("--standby");
    if (modules) spec.argv.push_back("--warm-python");
    if (modules && opt.fork_modules) spec.argv.push_back("--fork-modules");
    spec.fds = {{0, -1}, {1, log}, {2, log}, {3, req[0]}, {4, resp[1]}};
    spec.limits.memory_mb = opt.memory_mb;
    spec.limits.isolate_network = true;  // candidates have no business on the network
    spec.limits.die_with_parent = true;
    out.spawned = clock_type::now();
    auto child = spawn_process(spec);
    close(req[0]);
    close(resp[1]);
    if (log >= 0) close(log);
    if (!child) {
      close(req[1]);
      close(resp[0]);
      return make_error("cannot start the eval worker: " + child.message());
    }
    out.pid = *child;
    out.to = req[1];
    out.from = resp[0];
    return {};
  }

  // Waits for "ready": a worker that cannot load (missing library, address-space limit too small) is a
  // setup error the user must see, not a candidate's crash. On success the process serves this client.
  status await_ready(worker_process& p) {
    const auto t0 = clock_type::now();
    auto hello = read_frame(p.from, opt.startup_timeout_s);
    start_wait_s += std::chrono::duration<double>(clock_type::now() - t0).count();
    std::string why;
    pid = p.pid;
    to_worker = p.to;
    from_worker = p.from;
    p = worker_process{};
    if (hello.status == frame_status::ok) {
      auto ready = decode_as<bench_result>(hello.payload);
      if (ready && ready->status == "ready") {
        ++starts;
        ready_note = ready->notes.empty() ? std::string() : "; its own: " + ready->notes.front();
        return {};
      }
      why = ready ? "unexpected first message (status '" + ready->status + "')" : ready.message();
    } else if (hello.status == frame_status::timeout) {
      why = "not ready within " + fmt_s(opt.startup_timeout_s);
    } else {
      why = "it ended before it was ready: ";
      std::string how = died();
      return make_error("the eval worker '" + path + "' failed to start: " + why + how +
                        (opt.log_path.empty() ? "" : " (see " + opt.log_path + ")"));
    }
    stop();
    return make_error("the eval worker '" + path + "' failed to start: " + why);
  }

  // A worker ready to serve: the standby one when there is one (a failed standby is only replaced, never
  // charged to anyone), else a fresh start.
  status start() {
    if (spare.pid > 0) {
      worker_process p = spare;
      const double waited_since = std::chrono::duration<double>(clock_type::now() - p.spawned).count();
      spare = worker_process{};
      spare_pid = 0;
      const double before = start_wait_s;
      // A standby that said "ready" and died while it waited has its hello still in the pipe: reaped here
      // and replaced by a fresh start, never handed a candidate.
      if (waitpid(p.pid, nullptr, WNOHANG) == p.pid) {
        close(p.to);
        close(p.from);
      } else if (await_ready(p)) {
        start_note = "worker: a standby, spawned " + fmt_s(waited_since) +
                     " before it was needed, ready after " + fmt_s(start_wait_s - before) + " more" +
                     ready_note;
        return {};
      }
    }
    worker_process p;
    if (auto st = spawn(false, p); !st) return st;
    const auto spawned = p.spawned;
    auto st = await_ready(p);
    if (st)
      start_note = "worker: started in " +
                   fmt_s(std::chrono::duration<double>(clock_type::now() - spawned).count()) + ready_note;
    return st;
  }

  // Starts the standby worker when one is wanted and none waits: it loads while the current one measures.
  void keep_standby() {
    if (!opt.standby || spare.pid > 0) return;
    if (spawn(true, spare)) spare_pid = spare.pid;
  }

  void stop_spare() {
    if (spare.pid <= 0) return;
    if (spare.to >= 0) close(spare.to);
    if (spare.from >= 0) close(spare.from);
    kill_and_reap(spare.pid);
    spare = worker_process{};
    spare_pid = 0;
  }

  // Closes the pipes and kills the worker's process group (candidates' children included).
  exit_info stop() {
    if (to_worker >= 0) close(to_worker);
    if (from_worker >= 0) close(from_worker);
    to_worker = from_worker = -1;
    exit_info info;
    if (pid > 0) info = kill_and_reap(pid);
    pid = 0;
    return info;
  }

  // The worker went away under us: how it ended, as "signal 11 (SIGSEGV)" or "exit code 3".
  std::string died() {
    if (to_worker >= 0) close(to_worker);
    if (from_worker >= 0) close(from_worker);
    to_worker = from_worker = -1;
    // It closed its end of the pipe: it is ending or has ended. A candidate that closed fd 4 and went on
    // running gets a second and is then killed with its group.
    exit_info info = reap_with_grace(pid, 1.0);
    pid = 0;
    return info.describe();
  }
};

worker_client::worker_client(worker_options options) : impl_(new impl) {
  impl_->opt = std::move(options);
}

worker_client::~worker_client() {
  impl_->stop_spare();
  impl_->stop();
  delete impl_;
}

void worker_client::restart() {
  impl_->stop();
}
int worker_client::pid() const {
  return impl_->pid;
}
int worker_client::starts() const {
  return impl_->starts;
}
double worker_client::start_wait_s() const {
  return impl_->start_wait_s;
}
int worker_client::standby_pid() const {
  return impl_->spare_pid;
}

bench_result worker_client::evaluate(const eval_request& request) {
  auto t0 = clock_type::now();
  bench_result r;
  auto finish = [&](bench_result& res) -> bench_result {
    if (res.candidate_id.empty()) res.candidate_id = request.candidate_id;
    if (res.task.empty()) res.task = request.task.name;
    if (!impl_->start_note.empty()) res.notes.push_back(std::move(impl_->start_note));
    impl_->start_note.clear();
    res.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    // A standby taken or failed during this one is replaced now.
    impl_->keep_standby();
    return res;
  };
  try {
    auto& w = *impl_;
    w.modules = !request.task.module.empty();
    if (w.pid <= 0) {
      // A second try: a worker killed while it was loading is the machine's problem, not the candidate's.
      status started = w.start();
      if (!started) started = w.start();
      if (!started) {
        r.status = "error";
        r.error = started.message();
        // It died before it could serve: a fresh worker is tried, as for one that died under a request.
        r.worker_died = true;
        return finish(r);
      }
      // The next start's worker loads (Python and torch for KernelBench: most of an evaluation on a device)
      // while this one serves, not after: a retired worker is then replaced without a wait.
      w.keep_standby();
    }
    std::string worker_id = w.host + ":" + std::to_string(w.pid.load());
    r.worker = worker_id;
    const auto sent_at = clock_type::now();  // the deadline runs from the request, not the worker's start

    if (auto sent = write_frame(w.to_worker, encode(request, "benchmarker")); !sent) {
      std::string how = w.died();
      r.status = "crash";
      r.worker_died = true;
      r.error = "worker died: " + how + " (before the request was delivered: " + sent.message() + ")";
      return finish(r);
    }
    double left = w.opt.timeout_s - std::chrono::duration<double>(clock_type::now() - sent_at).count();
    auto frame = read_frame(w.from_worker, std::max(0.0, left));
    switch (frame.status) {
      case frame_status::timeout:
        w.stop();
        r.status = "timeout";
        r.error = "no result within " + fmt_s(w.opt.timeout_s) + "; worker " + worker_id + " killed";
        return finish(r);
      case frame_status::eof:
      case frame_status::error: {
        std::string how = w.died();
        r.status = "crash";
        r.worker_died = true;
        r.error = "worker died: " + how;
        if (frame.status == frame_status::error && !frame.error.empty()) r.error += " (" + frame.error + ")";
        return finish(r);
      }
      case frame_status::ok:
        break;
    }
    auto decoded = decode_as<bench_result>(frame.payload);
    if (!decoded) {
      // Something (a candidate writing to fd 4?) corrupted the stream: this worker cannot be trusted again.
      w.stop();
      r.status = "error";
      r.error = "malformed reply from worker " + worker_id + ": " + decoded.message();
      return finish(r);
    }
    r = std::move(*decoded);
    if (r.worker.empty()) r.worker = worker_id;
    // A CUDA candidate runs inside the worker: one that left work running there may still write anywhere in
    // it, so the worker is retired. (A CPU candidate ran in a process of its own, gone with its evaluation;
    // so did a KernelBench module on CUDA: a child forked for it, or a worker that retires after it.)
    const auto left_work = [&](evidence_kind k) { return has(r.evidence, evidence_tag(k)); };
    if (request.target == "cuda" && request.task.module.empty() &&
        (left_work(evidence_kind::threads_left_running) ||
         left_work(evidence_kind::output_changed_after_return) ||
         left_work(evidence_kind::work_outside_stream))) {
      w.stop();
      r.notes.push_back("worker " + worker_id + " retired: the candidate left work running in it");
    } else if (r.worker_retired) {
      // Said by the worker itself (a lost CUDA context, a kernel that never finished, LibTorch failing
      // inside it, or by plan: a fresh interpreter for each KernelBench module): it exits after answering,
      // and the next request must not find it gone. Its own note says which.
      w.stop();
      r.notes.push_back("worker " + worker_id + " retired after this evaluation, as it said it would");
    }
    return finish(r);
  } catch (const std::exception& e) {
    impl_->stop();
    r.status = "error";
    r.error = std::string("worker client: ") + e.what();
    return finish(r);
  }
}

bench_runner::bench_runner(worker_options worker, runner_options runner)
    : worker_(std::move(worker)), options_(runner) {}

bench_result bench_runner::run(const eval_request& request, double best_seen_for_task) {
  auto t0 = clock_type::now();
  int attempts = 0;
  std::vector<std::string> history;

  // One measurement, with a fresh worker for each death under it (our own timeout is not retried: the
  // candidate had its time).
  auto measure = [&]() {
    int tries = 0;
    for (;;) {
      bench_result res = worker_.evaluate(request);
      ++tries;
      ++attempts;
      // A crash the worker itself reports (the candidate's process died, a sticky CUDA error in its call) is
      // the candidate's doing and deterministic; only a worker that died under it earns a second try. So
      // does an error from a worker that failed inside (LibTorch out of memory, say): the state it failed in
      // may be an earlier candidate's doing (device memory it leaked), and a fresh worker tells.
      const bool retry = res.worker_died || (res.status == "error" && res.worker_retired);
      if (!retry || tries >= std::max(1, options_.max_attempts)) return res;
      history.push_back("attempt " + std::to_string(attempts) + ": " + res.error + " [" + res.worker +
                        "]; retried on a fresh worker");
    }
  };

  bench_result r = measure();
  bool outlier =
      r.status == "ok" && r.timed && r.correct && r.evidence.empty() &&
      (r.speedup_vs_eager > options_.outlier_speedup ||
       (best_seen_for_task > 0 && r.speedup_vs_eager > options_.outlier_vs_best * best_seen_for_task));
  if (outlier) {
    worker_.restart();
    bench_result again = measure();
    char line[256];
    if (again.status != "ok" || !again.timed) {
      std::snprintf(line, sizeof line, "outlier: %.3gx could not be re-measured in a fresh worker (%s: %s)",
                    r.speedup_vs_eager, again.status.c_str(), again.error.c_str());
      again.notes.insert(again.notes.begin(), line);
      r = std::move(again);
    } else {
      std::snprintf(line, sizeof line,
                    "outlier: %.3gx [%s] re-measured in a fresh worker as %.3gx [%s]; believed the lower",
                    r.speedup_vs_eager, r.worker.c_str(), again.speedup_vs_eager, again.worker.c_str());
      bench_result& lower = again.speedup_vs_eager < r.speedup_vs_eager ? again : r;
      bench_result& other = &lower == &again ? r : again;
      for (const auto& tag : other.evidence)
        if (!has(lower.evidence, tag)) lower.evidence.push_back(tag);
      lower.notes.insert(lower.notes.end(), other.notes.begin(), other.notes.end());
      lower.correct = lower.correct && other.correct;
      lower.max_abs_err = std::max(lower.max_abs_err, other.max_abs_err);
      lower.max_rel_err = std::max(lower.max_rel_err, other.max_rel_err);
      lower.notes.push_back(line);
      if (&lower == &again) r = std::move(again);
    }
  }
  r.notes.insert(r.notes.begin(), history.begin(), history.end());
  r.attempts = attempts;
  r.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  return r;
}

}  // namespace crucible::kernels
