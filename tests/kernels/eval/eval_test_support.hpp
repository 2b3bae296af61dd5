#pragma once
// Shared pieces of the evaluation-engine tests: the test task, candidate files, one artifact cache and one
// worker per test process (starting a worker loads LibTorch; the tests share it to stay fast).
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "kernels/eval/evaluate.hpp"
#include "messages/task.hpp"

namespace crucible::kernels::test {

/// out = relu((x + b) * 2): an elementwise chain where one fused pass beats three eager ones.
inline task_spec bias_scale_relu_task(int64_t rows = 512, int64_t cols = 1024) {
  task_spec t;
  t.name = "test_bias_scale_relu";
  t.family = "elementwise";
  t.description = "relu((x + b) * 2)";
  tensor_spec x;
  x.name = "x";
  x.shape = {rows, cols};
  tensor_spec b;
  b.name = "b";
  b.shape = {cols};
  b.dist = "uniform";
  b.lo = -0.5;
  b.hi = 0.5;
  b.param = true;
  t.inputs = {x, b};
  t.ops = {{"add", {"b"}, {}}, {"mul_scalar", {}, {{"s", 2.0}}}, {"relu", {}, {}}};
  return t;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A hand-written candidate from tests/data/candidates.
inline std::string candidate_source(const std::string& name) {
  return read_text(std::string(CRUCIBLE_TEST_DATA_DIR) + "/candidates/" + name + ".cpp");
}

/// The worker under test: $CRUCIBLE_EVAL_WORKER (to compare builds), else the one of this build tree.
inline std::string worker_path() {
  if (const char* env = std::getenv("CRUCIBLE_EVAL_WORKER"); env && *env) return env;
  return std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";
}

/// A directory of its own for this test process, removed at exit.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "crucible-eval-test-XXXXXX").string();
    std::string made = mkdtemp(tmpl.data());
    static struct cleanup {
      std::string d;
      ~cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    } c{made};
    return made;
  }();
  return dir;
}

/// Small measurement settings: enough to exercise every step, quick on 2 cores.
inline eval_options small_eval_options() {
  eval_options o;
  o.seeds = 2;
  o.input_sets = 2;
  o.warmup = 1;
  o.buckets = 3;
  o.trials = 2;
  return o;
}

inline evaluation_config test_config() {
  evaluation_config c;
  // Shared by every test process of this build tree (ctest runs each test alone): the cache is safe for
  // concurrent compilers and keyed on the compiler and the ABI header, so a stale hit cannot happen.
  c.compiler.cache_dir = std::string(CRUCIBLE_BINARY_DIR) + "/eval-test-cache";
  c.worker.worker_path = worker_path();
  c.worker.timeout_s = 60.0;
  c.worker.log_path = scratch_dir() + "/worker.log";
  c.eval = small_eval_options();
  c.runner.outlier_speedup = 1e9;  // the outlier path has its own test
  return c;
}

/// One runner (one worker) shared by the tests of this process.
inline bench_runner& shared_runner() {
  static auto config = test_config();
  static bench_runner runner(config.worker, config.runner);
  return runner;
}

inline evaluation evaluate_candidate(const std::string& name,
                                     const eval_options& options = small_eval_options()) {
  auto config = test_config();
  config.eval = options;
  return evaluate_source(bias_scale_relu_task(), candidate_source(name), config, &shared_runner());
}

}  // namespace crucible::kernels::test
