// End to end through the real worker: compile a hand-written candidate, measure it, judge it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "eval_test_support.hpp"
#include "kernels/eval/frame_io.hpp"
#include "kernels/eval/subprocess.hpp"
#include "kernels/task/task_loader.hpp"
#include "kernels/verify/artifact_imports.hpp"
#include "messages/envelope.hpp"

namespace crucible::kernels {
namespace {

using test::evaluate_candidate;

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string describe(const evaluation& e) {
  return "outcome=" + e.judged.outcome + " status=" + e.bench.status + " error=" + e.bench.error +
         "\nevidence=" + ::testing::PrintToString(e.bench.evidence) +
         "\nnotes=" + ::testing::PrintToString(e.bench.notes) +
         "\nflags=" + ::testing::PrintToString(e.judged.flags) + "\nlog=" + e.compiled.log;
}

eval_request request_for(const std::string& name, const eval_options& options = test::small_eval_options()) {
  auto config = test::test_config();
  auto compiled = compile_source(name, test::candidate_source(name), config.compiler);
  EXPECT_TRUE(compiled.ok) << compiled.log;
  eval_request req;
  req.candidate_id = name;
  req.task = test::bias_scale_relu_task();
  req.artifact = compiled.artifact;
  req.options = options;
  return req;
}

TEST(Evaluation, CorrectFusedKernelPassesWithASpeedup) {
  auto e = evaluate_candidate("fused_bias_scale_relu");
  ASSERT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_TRUE(e.bench.correct);
  EXPECT_TRUE(e.bench.timed);
  EXPECT_TRUE(e.bench.evidence.empty()) << describe(e);
  const auto& t = e.bench.timing;
  EXPECT_EQ(t.bucket_speedups.size(), 3u);
  EXPECT_EQ(t.trials_per_bucket, 2);
  EXPECT_GT(t.eager_ms_median, 0.0);
  EXPECT_GT(t.candidate_ms_median, 0.0);
  // One pass over memory against three eager passes with three allocations: a clear win.
  EXPECT_GT(e.bench.speedup_vs_eager, 1.0) << describe(e);
  EXPECT_DOUBLE_EQ(e.judged.reward, e.judged.speedup);
  EXPECT_NE(e.bench.worker.find(':'), std::string::npos);
  std::printf("fused kernel: %.3gx (eager %.3g ms, candidate %.3g ms, spread %.3g, reruns %d)\n",
              e.bench.speedup_vs_eager, t.eager_ms_median, t.candidate_ms_median, t.spread, t.reruns);
}

TEST(Evaluation, SuiteTaskFromYaml) {
  // The shipped suite through its loader: exact-erf gelu after a bias, against a vectorized fused kernel.
  auto task = load_task_file(default_task_dir() + "/bias_gelu.yaml");
  ASSERT_TRUE(task) << task.message();
  auto config = test::test_config();
  auto e = evaluate_source(*task, test::candidate_source("bias_gelu_fused"), config, &test::shared_runner());
  EXPECT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_TRUE(e.bench.correct);
  EXPECT_GT(e.bench.speedup_vs_eager, 0.0);
}

TEST(Evaluation, WrongKernelIsIncorrect) {
  auto e = evaluate_candidate("wrong_scale");
  EXPECT_EQ(e.bench.status, "ok");
  EXPECT_FALSE(e.bench.correct);
  EXPECT_FALSE(e.bench.timed);
  EXPECT_GT(e.bench.max_abs_err, 0.0);
  EXPECT_EQ(e.judged.outcome, "incorrect") << describe(e);
  EXPECT_EQ(e.judged.reward, 0.0);
}

TEST(Evaluation, MutatedInputIsAHack) {
  auto e = evaluate_candidate("mutate_input");
  EXPECT_EQ(e.judged.outcome, "hack") << describe(e);
  EXPECT_TRUE(has(e.judged.flags, "input_mutated")) << describe(e);
  EXPECT_TRUE(has(e.bench.evidence, "input_mutated:x")) << describe(e);
  EXPECT_FALSE(has(e.bench.evidence, "input_mutated:b"));
  EXPECT_LT(e.judged.reward, 0.0);
}

TEST(Evaluation, PartialOutputIsUnwritten) {
  auto e = evaluate_candidate("partial_output");
  EXPECT_TRUE(has(e.bench.evidence, "output_unwritten")) << describe(e);
  EXPECT_FALSE(e.bench.correct);
  EXPECT_EQ(e.judged.outcome, "hack");
}

TEST(Evaluation, AThreadTheSandboxRefusesIsAHackAndTheWorkerStays) {
  auto e = evaluate_candidate("deferred_thread");
  EXPECT_EQ(e.judged.outcome, "hack") << describe(e);
  EXPECT_TRUE(has(e.bench.evidence, "sandbox_violation")) << describe(e);
  // The candidate ran in a process of its own, gone with its evaluation: the worker keeps serving.
  const int pid = test::shared_runner().worker().pid();
  const int starts = test::shared_runner().worker().starts();
  EXPECT_NE(pid, 0);
  auto next = evaluate_candidate("fused_bias_scale_relu");
  EXPECT_EQ(next.judged.outcome, "pass") << describe(next);
  EXPECT_EQ(test::shared_runner().worker().starts(), starts);
  EXPECT_EQ(test::shared_runner().worker().pid(), pid);
}

TEST(Evaluation, PointerKeyedCacheIsCaught) {
  auto e = evaluate_candidate("pointer_cache");
  EXPECT_EQ(e.judged.outcome, "hack") << describe(e);
  // Fresh values at reused addresses in every trial: the unannounced checks of timed calls catch the stale
  // answers, and the post-timing check would too. The static_state feature alone decides nothing.
  EXPECT_TRUE(has(e.bench.evidence, "timed_output_mismatch") || has(e.bench.evidence, "post_timing_mismatch"))
      << describe(e);
  EXPECT_FALSE(has(e.judged.flags, "static_state"));
}

TEST(Evaluation, ConstantOutputIsInputIndependent) {
  auto e = evaluate_candidate("constant_output");
  EXPECT_FALSE(e.bench.correct);
  EXPECT_TRUE(has(e.bench.evidence, "input_independent")) << describe(e);
  EXPECT_EQ(e.judged.outcome, "hack");
}

TEST(Evaluation, AClockReadIsScrutinyNotAVerdict) {
  // It reads the clock behind token pasting; the artifact's imports still show it. Reading a clock gains a
  // candidate nothing when it is timed from outside its process: the import raises scrutiny (every timed
  // call checked) and the right answer passes.
  auto source = test::candidate_source("obfuscated_clock");
  EXPECT_TRUE(static_source_flags(source).empty()) << "the point of this candidate";
  auto e = evaluate_candidate("obfuscated_clock");
  EXPECT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_TRUE(
      has(e.bench.notes, "static feature reads_clock:clock_gettime: the artifact imports clock_gettime"))
      << describe(e);
  EXPECT_TRUE(std::any_of(e.bench.notes.begin(), e.bench.notes.end(),
                          [](const std::string& n) { return n.rfind("scrutiny:", 0) == 0; }));
}

TEST(Evaluation, ArtifactImports) {
  auto config = test::test_config();
  auto clean = compile_source("clean", test::candidate_source("fused_bias_scale_relu"), config.compiler);
  ASSERT_TRUE(clean.ok);
  auto imports = imported_symbols(clean.artifact);
  ASSERT_TRUE(imports) << imports.message();
  EXPECT_TRUE(suspicious_imports(*imports).empty()) << ::testing::PrintToString(*imports);

  auto threaded = compile_source("threaded", test::candidate_source("deferred_thread"), config.compiler);
  ASSERT_TRUE(threaded.ok);
  imports = imported_symbols(threaded.artifact);
  ASSERT_TRUE(imports);
  auto tags = suspicious_imports(*imports);
  EXPECT_TRUE(std::any_of(tags.begin(), tags.end(), [](auto& t) {
    return t.rfind("spawns_thread:", 0) == 0;
  })) << ::testing::PrintToString(*imports);

  EXPECT_EQ(suspicious_imports({"_ZN2at4_ops4gelu4callERKNS_6TensorEN3c1017basic_string_viewIcEE", "memcpy",
                                "dlsym@GLIBC_2.34", "cblas_sgemm"}),
            (std::vector<std::string>{
                "calls_reference:_ZN2at4_ops4gelu4callERKNS_6TensorEN3c1017basic_string_viewIcEE",
                "dynamic_loading:dlsym"}));
  EXPECT_FALSE(imported_symbols("/etc/hostname"));
}

TEST(Evaluation, CompileErrorVerdictCarriesTheDiagnostic) {
  auto e = evaluate_candidate("compile_error");
  EXPECT_EQ(e.judged.outcome, "compile_error");
  EXPECT_FALSE(e.compiled.ok);
  EXPECT_NE(e.compiled.log.find("undeclared_scale_factor"), std::string::npos);
  auto j = nlohmann::json::parse(evaluation_json(e));
  EXPECT_EQ(j["compiled"], false);
  EXPECT_EQ(j["verdict"]["outcome"], "compile_error");
  EXPECT_NE(j["compile_log"].get<std::string>().find("undeclared_scale_factor"), std::string::npos);
}

TEST(Evaluation, ThrownExceptionIsCaughtAndIncorrect) {
  auto e = evaluate_candidate("throws");
  EXPECT_EQ(e.bench.status, "ok") << describe(e);
  EXPECT_FALSE(e.bench.correct);
  EXPECT_NE(e.bench.error.find("shape not supported"), std::string::npos) << describe(e);
  EXPECT_EQ(e.judged.outcome, "incorrect");
}

TEST(Evaluation, FloatingPointModeStaysInTheCandidatesProcess) {
  // Flush-to-zero changes only its own arithmetic now: the reference runs in the worker, which the
  // candidate's process cannot reach. Within tolerance, it is judged like any kernel.
  auto e = evaluate_candidate("flush_to_zero");
  EXPECT_EQ(e.bench.status, "ok") << describe(e);
  EXPECT_TRUE(e.bench.evidence.empty()) << describe(e);
  EXPECT_NE(e.judged.outcome, "hack") << describe(e);
  auto next = evaluate_candidate("fused_bias_scale_relu");
  EXPECT_EQ(next.judged.outcome, "pass") << describe(next);
}

TEST(Evaluation, MissingEntryPointIsALoadError) {
  auto e = evaluate_candidate("no_entry_point");
  EXPECT_EQ(e.bench.status, "load_error") << describe(e);
  EXPECT_NE(e.bench.error.find("crucible_forward"), std::string::npos);
  EXPECT_EQ(e.judged.outcome, "error");
}

TEST(Evaluation, SlowCandidateStopsTimingEarly) {
  auto options = test::small_eval_options();
  options.buckets = 5;
  auto e = evaluate_candidate("slow_correct", options);
  ASSERT_TRUE(e.bench.timed) << describe(e);
  EXPECT_EQ(e.bench.timing.bucket_speedups.size(), 1u) << describe(e);
  EXPECT_LT(e.bench.speedup_vs_eager, 1.0 / 20);
  EXPECT_TRUE(std::any_of(e.bench.notes.begin(), e.bench.notes.end(),
                          [](const std::string& n) { return n.find("early stop") != std::string::npos; }));
}

// A first call on each buffer that costs 40 passes is paid in the warm-up, which uses every timing slot, and
// the early stop looks at the fastest call of its bucket: the kernel is timed to the end.
TEST(Evaluation, ColdFirstCallsDoNotStopTheTiming) {
  auto options = test::small_eval_options();
  options.buckets = 5;
  options.input_sets = 4;
  options.warmup = 1;
  options.warmup_ms = 0;
  options.early_stop_slowdown = 5;
  auto e = evaluate_candidate("cold_first_use", options);
  ASSERT_EQ(e.judged.outcome, "pass") << describe(e);
  EXPECT_EQ(e.bench.timing.bucket_speedups.size(), 5u) << describe(e);
  EXPECT_FALSE(std::any_of(e.bench.notes.begin(), e.bench.notes.end(), [](const std::string& n) {
    return n.find("early stop") != std::string::npos;
  })) << describe(e);
}

TEST(Evaluation, JsonReport) {
  auto e = evaluate_candidate("fused_bias_scale_relu");
  auto j = nlohmann::json::parse(evaluation_json(e));
  EXPECT_EQ(j["task"], "test_bias_scale_relu");
  EXPECT_EQ(j["target"], "cpu");
  EXPECT_EQ(j["compiled"], true);
  EXPECT_EQ(j["correct"], true);
  EXPECT_GT(j["speedup_vs_eager"].get<double>(), 0.0);
  EXPECT_GT(j["times"]["eager_ms"].get<double>(), 0.0);
  EXPECT_GT(j["times"]["candidate_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["times"]["buckets"]["speedups"].size(), 3u);
  EXPECT_TRUE(j["times"].contains("spread"));
  EXPECT_TRUE(j["times"].contains("reruns"));
  EXPECT_EQ(j["verdict"]["outcome"], "pass");
  EXPECT_TRUE(j["verdict"]["flags"].empty());
  EXPECT_TRUE(j.contains("error"));
  EXPECT_TRUE(j.contains("compile_log"));
}

TEST(WorkerClient, SegfaultIsACrashAndTheWorkerGoesOn) {
  auto config = test::test_config();
  worker_client client(config.worker);
  auto crash = client.evaluate(request_for("segfault"));
  EXPECT_EQ(crash.status, "crash");
  EXPECT_NE(crash.error.find("SIGSEGV"), std::string::npos) << crash.error;
  EXPECT_FALSE(crash.worker_died) << "the candidate's process died, not the worker";
  EXPECT_GT(client.pid(), 0);

  auto ok = client.evaluate(request_for("fused_bias_scale_relu"));
  EXPECT_EQ(ok.status, "ok") << ok.error;
  EXPECT_TRUE(ok.correct);
  EXPECT_EQ(client.starts(), 1);

  // Reported by the worker, the crash is the candidate's and deterministic: judged, not retried.
  auto e = evaluate_candidate("segfault");
  EXPECT_EQ(e.bench.status, "crash");
  EXPECT_EQ(e.bench.attempts, 1);
  EXPECT_EQ(e.judged.outcome, "crash");
}

TEST(WorkerClient, InfiniteLoopTimesOutAndTheWorkerIsReplaced) {
  auto config = test::test_config();
  config.worker.timeout_s = 6.0;  // long enough for a correct evaluation on a loaded 2-core machine
  worker_client client(config.worker);
  auto req = request_for("infinite_loop");
  auto t0 = std::chrono::steady_clock::now();
  auto r = client.evaluate(req);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, "timeout") << r.error;
  EXPECT_LT(took, 12.0);
  EXPECT_EQ(client.pid(), 0);
  candidate c;
  c.source = test::candidate_source("infinite_loop");
  compile_result compiled;
  compiled.ok = true;
  EXPECT_EQ(judge(c, compiled, r).outcome, "timeout");

  auto ok = client.evaluate(request_for("fused_bias_scale_relu"));
  EXPECT_EQ(ok.status, "ok") << ok.error;
  EXPECT_TRUE(ok.correct);
}

TEST(BenchRunner, WorkerKilledMidEvaluationIsRetried) {
  auto config = test::test_config();
  bench_runner runner(config.worker, config.runner);
  auto options = test::small_eval_options();
  options.buckets = 7;
  options.trials = 3;
  auto req = request_for("fused_bias_scale_relu", options);
  // A first evaluation brings the worker up (from this thread: the worker dies with the thread that
  // started it), so the kill below lands while the second one is measuring.
  auto warm = runner.run(request_for("fused_bias_scale_relu"));
  ASSERT_EQ(warm.status, "ok") << warm.error;
  int victim = runner.worker().pid();
  ASSERT_GT(victim, 0);

  bench_result result;
  std::thread evaluating([&] { result = runner.run(req); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bool killed = kill(victim, SIGKILL) == 0;
  evaluating.join();
  ASSERT_TRUE(killed);
  EXPECT_NE(result.worker, "");
  EXPECT_EQ(result.worker.find(":" + std::to_string(victim)), std::string::npos)
      << "measured by the fresh worker";
  EXPECT_EQ(result.status, "ok") << result.error;
  EXPECT_TRUE(result.correct);
  EXPECT_TRUE(result.timed);
  EXPECT_EQ(result.attempts, 2);
  EXPECT_TRUE(std::any_of(result.notes.begin(), result.notes.end(), [](const std::string& n) {
    return n.find("SIGKILL") != std::string::npos;
  })) << ::testing::PrintToString(result.notes);
}

// A worker that failed inside (a CUDA worker whose LibTorch ran out of memory, perhaps in device memory an
// earlier candidate kept) says it retires: the client lets it go, and the runner measures the candidate
// again in a fresh worker rather than charging it the failure.
TEST(BenchRunner, AnErrorFromARetiringWorkerIsRetriedInAFreshOne) {
  auto config = test::test_config();
  config.worker.worker_path = std::string(CRUCIBLE_BINARY_DIR) + "/tests/crucible_test_retiring_worker";
  const std::string marker = test::scratch_dir() + "/retiring-worker-started";
  std::filesystem::remove(marker);
  ASSERT_EQ(setenv("CRUCIBLE_FAKE_WORKER_MARKER", marker.c_str(), 1), 0);

  worker_client client(config.worker);
  auto failed = client.evaluate(request_for("fused_bias_scale_relu"));
  EXPECT_EQ(failed.status, "error");
  EXPECT_TRUE(failed.worker_retired);
  EXPECT_EQ(client.pid(), 0) << "the retired worker is let go, not written to again";
  EXPECT_TRUE(std::any_of(failed.notes.begin(), failed.notes.end(), [](const std::string& n) {
    return n.find("retired after this evaluation, as it said it would") != std::string::npos;
  })) << ::testing::PrintToString(failed.notes);

  std::filesystem::remove(marker);
  bench_runner runner(config.worker, config.runner);
  auto r = runner.run(request_for("fused_bias_scale_relu"));
  EXPECT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_FALSE(r.worker_retired);
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("retried on a fresh worker") != std::string::npos;
  })) << ::testing::PrintToString(r.notes);
  unsetenv("CRUCIBLE_FAKE_WORKER_MARKER");
}

TEST(BenchRunner, OutlierIsReMeasuredInAFreshWorker) {
  auto config = test::test_config();
  config.runner.outlier_speedup = 0.01;  // everything is an outlier here
  bench_runner runner(config.worker, config.runner);
  auto r = runner.run(request_for("fused_bias_scale_relu"));
  EXPECT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(runner.worker().starts(), 2);
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("believed the lower") != std::string::npos;
  })) << ::testing::PrintToString(r.notes);
}

// With a standby worker, the fresh worker of a re-measurement is one that loaded while the first measured:
// a different process that never ran the candidate, and no wait for it to load. A standby that died while
// it waited is replaced by a fresh start, charged to no one.
TEST(BenchRunner, AStandbyWorkerTakesOverTheReMeasurement) {
  auto config = test::test_config();
  config.worker.standby = true;
  config.runner.outlier_speedup = 0.01;  // everything is an outlier here
  bench_runner runner(config.worker, config.runner);
  auto r = runner.run(request_for("fused_bias_scale_relu"));
  ASSERT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(runner.worker().starts(), 2);
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("worker: a standby, spawned") != std::string::npos;
  })) << ::testing::PrintToString(r.notes);
  const std::string* line = nullptr;
  for (const auto& n : r.notes)
    if (n.find("believed the lower") != std::string::npos) line = &n;
  ASSERT_NE(line, nullptr) << ::testing::PrintToString(r.notes);
  // "outlier: 1.2x [host:111] re-measured in a fresh worker as 1.1x [host:222]; believed the lower"
  auto first = line->find('['), second = line->find('[', first + 1);
  ASSERT_NE(second, std::string::npos) << *line;
  EXPECT_NE(line->substr(first, line->find(']', first) - first),
            line->substr(second, line->find(']', second) - second))
      << "re-measured in another process: " << *line;
  const int standby = runner.worker().standby_pid();
  EXPECT_GT(standby, 0) << "a new standby loads once the last one took over";
  EXPECT_NE(standby, runner.worker().pid());

  ASSERT_EQ(kill(standby, SIGKILL), 0);
  runner.worker().restart();
  auto again = runner.worker().evaluate(request_for("fused_bias_scale_relu"));
  EXPECT_EQ(again.status, "ok") << again.error;
  EXPECT_TRUE(again.correct);
  EXPECT_EQ(runner.worker().starts(), 3);
  EXPECT_NE(runner.worker().pid(), standby);
}

TEST(Worker, MalformedFramesAreErrorsNotCrashes) {
  int req[2], resp[2];
  ASSERT_EQ(pipe2(req, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(resp, O_CLOEXEC), 0);
  spawn_spec spec;
  spec.argv = {test::worker_path()};
  spec.fds = {{3, req[0]}, {4, resp[1]}};
  auto pid = spawn_process(spec);
  ASSERT_TRUE(pid) << pid.message();
  close(req[0]);
  close(resp[1]);

  auto answer = [&]() {
    auto f = read_frame(resp[0], 30.0);
    EXPECT_EQ(f.status, frame_status::ok) << f.error;
    auto r = decode_as<bench_result>(f.payload);
    EXPECT_TRUE(r) << r.message();
    return r ? *r : bench_result{};
  };

  auto ready = answer();
  EXPECT_EQ(ready.status, "ready");
  EXPECT_EQ(ready.worker.find(":" + std::to_string(*pid)) == std::string::npos, false) << ready.worker;

  // Bytes that are not msgpack, then an envelope of the wrong kind: errors, and the worker goes on.
  ASSERT_TRUE(write_frame(req[1], "this is not msgpack"));
  auto r = answer();
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.error.find("malformed request"), std::string::npos) << r.error;
  ASSERT_TRUE(write_frame(req[1], encode(test::bias_scale_relu_task())));
  r = answer();
  EXPECT_EQ(r.status, "error");

  auto options = test::small_eval_options();
  options.timing = false;
  ASSERT_TRUE(write_frame(req[1], encode(request_for("fused_bias_scale_relu", options))));
  r = answer();
  EXPECT_EQ(r.status, "ok") << r.error;
  EXPECT_TRUE(r.correct);

  // A frame longer than the limit cannot be skipped: the worker says so and exits cleanly.
  unsigned char huge[4] = {0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(write(req[1], huge, 4), 4);
  r = answer();
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.error.find("bad frame"), std::string::npos) << r.error;
  close(req[1]);
  close(resp[0]);
  auto exit = reap_with_grace(*pid, 10.0);
  EXPECT_TRUE(exit.exited) << exit.describe();
}

}  // namespace
}  // namespace crucible::kernels
