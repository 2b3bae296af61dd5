// Emits programs for the test tasks (eager, one per "always option i" walk, and random walks), compiles
// them with the candidate compiler's flags, runs them through the ABI and checks them against the
// double-precision oracle of the original chain. Programs of one task share a translation unit (each in
// its own namespace) so the suite compiles a handful of files, two at a time. CRUCIBLE_EXTENDED=1 runs
// more random programs.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kernels/abi/crucible_abi.h"
#include "kernels/program/cpu_math.hpp"
#include "kernels/program/emit_cpu.hpp"
#include "kernels/program/program_space.hpp"
#include "kernels/task/task_loader.hpp"
#include "kernels/verify/artifact_imports.hpp"
#include "kernels/verify/judge.hpp"
#include "tests/kernels/program/chain_oracle.hpp"
#include "tests/kernels/program/test_tasks.hpp"

namespace crucible::kernels {
namespace {

const std::string abi_dir = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../kernels/abi";

std::string temp_dir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/crucible_program_test_XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

// Compiles `source` into a shared object; returns the dlopen handle, or null and the compiler's log (or the
// verifier's objection to the object's imports).
void* compile(const std::string& name, const std::string& source, std::string& log) {
  // A fresh path per call: dlopen hands back an already loaded object for a path it has seen.
  static std::atomic<int> serial{0};
  const std::string base = temp_dir() + "/" + name + "_" + std::to_string(serial++);
  const std::string src = base + ".cpp", so = base + ".so", err = base + ".log";
  std::ofstream(src) << source;
  const std::string cmd = "g++ -O3 -march=native -std=c++17 -fPIC -shared -fopenmp-simd -I" + abi_dir + " " +
                          src + " -o " + so + " -lblas > " + err + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream f(err);
    log.assign(std::istreambuf_iterator<char>(f), {});
    return nullptr;
  }
  // Nor may what it imports: no threads, clocks, processes or reference calls.
  auto imports = imported_symbols(so);
  if (!imports) {
    log = imports.message();
    return nullptr;
  }
  for (const auto& tag : suspicious_imports(*imports)) log += "suspicious import " + tag + "\n";
  if (!log.empty()) return nullptr;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) log = dlerror();
  return h;
}

// Several emitted programs in one translation unit: includes and file-wide pragmas hoisted, the rest in
// namespace p<k>, the entry point renamed crucible_forward_<k>.
std::string bundle(const std::vector<std::string>& sources) {
  std::string head, body;
  std::set<std::string> includes;
  for (size_t k = 0; k < sources.size(); ++k) {
    std::string rest;
    size_t pos = 0;
    while (pos < sources[k].size()) {
      size_t end = sources[k].find('\n', pos);
      if (end == std::string::npos) end = sources[k].size();
      std::string line = sources[k].substr(pos, end - pos);
      if (line.rfind("#include", 0) == 0 || line.rfind("#pragma GCC optimize", 0) == 0) {
        if (includes.insert(line).second) head += line + "\n";
      } else {
        rest += line + "\n";
      }
      pos = end + 1;
    }
    const std::string entry = "crucible_forward(";
    rest.replace(rest.find(entry), entry.size(), "crucible_forward_" + std::to_string(k) + "(");
    body += "namespace p" + std::to_string(k) + " {\n" + rest + "}\n";
  }
  return head + body;
}

// Values as the spec draws them (`heavy`: activations Student-t with 2 degrees of freedom, clipped at 1e3).
std::vector<float> random_values(const tensor_spec& t, std::mt19937_64& rng, bool heavy) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uni(1e-12, 1.0);
  std::vector<float> v(static_cast<size_t>(numel(t.shape)));
  for (auto& x : v) {
    double s;
    if ((heavy && !t.param) || t.dist == "heavy_tailed")
      s = std::max(-1e3, std::min(1e3, t.scale * normal(rng) / std::sqrt(-std::log(uni(rng)))));
    else if (t.dist == "uniform")
      s = t.lo + (t.hi - t.lo) * uni(rng);
    else
      s = t.scale * normal(rng);
    if (t.dist == "positive") s = std::fabs(s);
    x = static_cast<float>(s);
  }
  return v;
}

cru_tensor view(std::vector<float>& data, const shape_t& shape) {
  cru_tensor t{};
  t.data = data.data();
  t.dtype = CRU_FLOAT32;
  t.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.stride[d] = stride;
    stride *= shape[d];
  }
  return t;
}

shape_t output_shape(const task_spec& task) {
  return infer_shapes(task)->output();
}

// Runs fn on fresh inputs and compares with the oracle; returns "" or what went wrong.
std::string check_once(const task_spec& task, crucible_forward_fn fn, uint64_t seed, bool heavy,
                       bool workspace) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<float>> inputs;
  std::vector<cru_tensor> views;
  for (const auto& t : task.inputs) inputs.push_back(random_values(t, rng, heavy));
  for (size_t i = 0; i < inputs.size(); ++i) views.push_back(view(inputs[i], task.inputs[i].shape));
  const auto copies = inputs;
  const shape_t oshape = output_shape(task);
  std::vector<float> out(static_cast<size_t>(numel(oshape)), std::nanf("0x7fc0dead"));
  cru_tensor o = view(out, oshape);
  std::vector<char> ws(workspace ? 1 << 22 : 0);
  cru_context ctx{CRUCIBLE_ABI_VERSION, -1, nullptr, workspace ? ws.data() : nullptr, ws.size(), nullptr};
  const int rc = fn(&ctx, views.data(), static_cast<int32_t>(views.size()), &o, 1);
  if (rc != 0) return "returned " + std::to_string(rc);
  if (inputs != copies) return "modified its inputs";
  const auto want = testing::run_chain_oracle(task, copies);
  for (size_t i = 0; i < out.size(); ++i) {
    const float w = static_cast<float>(want[i]);
    const float g = out[i];
    const bool ok = std::isfinite(w) ? std::fabs(double(g) - want[i]) <=
                                           task_atol(task) + task_rtol(task) * std::fabs(want[i])
                                     : (std::isnan(w) ? std::isnan(g) : g == w);
    if (!ok)
      return "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
             std::to_string(want[i]) + (heavy ? " (heavy-tailed inputs)" : "");
  }
  return "";
}

// A walk that takes option i (or the last) at every decision: with i = 1, 2 every rewrite, every fuse and
// the second/third strategy and knob values of every group appear in some program.
program option_walk(const task_spec& task, size_t i) {
  auto b = program_builder::create(task);
  while (!b->done()) {
    const auto& o = b->next().options;
    b->choose(o[std::min(i, o.size() - 1)]);
  }
  return b->result();
}

struct task_programs {
  testing::test_task tt;
  std::vector<program> programs;
  std::vector<std::string> sources;
  void* handle = nullptr;
  std::string log;
};

// Compiles every task's bundle, two translation units at a time.
void compile_all(std::vector<task_programs>& all) {
  std::mutex m;
  size_t next = 0;
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(m);
        if (next >= all.size()) return;
        i = next++;
      }
      all[i].handle = compile(all[i].tt.task.name, bundle(all[i].sources), all[i].log);
    }
  };
  std::thread t1(worker), t2(worker);
  t1.join();
  t2.join();
}

TEST(EmitCpu, EveryProgramMatchesTheOracle) {
  const bool extended = std::getenv("CRUCIBLE_EXTENDED") != nullptr;
  const int n_random = extended ? 40 : 6;
  std::vector<task_programs> all;
  std::mt19937_64 rng(11);
  for (const auto& tt : testing::test_tasks()) {
    task_programs tp{tt, {}, {}, nullptr, {}};
    std::set<std::string> texts;
    auto add = [&](const program& p) {
      if (texts.insert(to_text(p)).second) tp.programs.push_back(p);
    };
    add(eager_program(tt.task));
    add(option_walk(tt.task, 1));
    add(option_walk(tt.task, 2));
    for (int i = 0; i < n_random; ++i) add(random_program(tt.task, rng));
    for (const auto& p : tp.programs) {
      auto src = emit_cpu(tt.task, p);
      ASSERT_TRUE(src) << tt.task.name << ": " << to_text(p) << ": " << src.message();
      // The verifier's static checks must not flag what the emitter writes (no threads, clocks, state).
      std::vector<std::string> evidence;
      EXPECT_TRUE(static_source_flags(*src, &evidence).empty())
          << tt.task.name << ": " << to_text(p) << ": " << (evidence.empty() ? "" : evidence.front());
      tp.sources.push_back(*src);
    }
    all.push_back(std::move(tp));
  }
  compile_all(all);

  size_t checked = 0;
  for (auto& tp : all) {
    const auto& task = tp.tt.task;
    ASSERT_NE(tp.handle, nullptr) << task.name << ": " << tp.log.substr(0, 4000);
    for (size_t k = 0; k < tp.programs.size(); ++k) {
      auto fn = reinterpret_cast<crucible_forward_fn>(
          dlsym(tp.handle, ("crucible_forward_" + std::to_string(k)).c_str()));
      ASSERT_NE(fn, nullptr);
      const std::string what = task.name + ": " + to_text(tp.programs[k]);
      EXPECT_EQ(check_once(task, fn, 100 + k, false, false), "") << what;
      EXPECT_EQ(check_once(task, fn, 200 + k, false, true), "") << what << " (with ctx->workspace)";
      if (tp.tt.heavy_ok) EXPECT_EQ(check_once(task, fn, 300 + k, true, k % 2), "") << what;
      ++checked;
    }
  }
  EXPECT_GT(checked, all.size() * 4);
}

// The shipped task suite (kernels/tasks), at its real sizes: the eager program and the option walk that
// takes every rewrite, fuses every op it can and picks the second strategy and knob values (the third too
// with CRUCIBLE_EXTENDED=1).
TEST(EmitCpu, TaskSuiteProgramsMatchTheOracle) {
  auto suite = load_task_suite(default_task_dir(), "cpu");
  if (!suite || suite->empty()) GTEST_SKIP() << "no task suite: " << (suite ? "empty" : suite.message());
  std::vector<task_programs> all;
  for (const auto& t : *suite) {
    task_programs tp{testing::test_task{t, false}, {}, {}, nullptr, {}};
    std::set<std::string> texts;
    std::vector<program> programs = {eager_program(t), option_walk(t, 1)};
    if (std::getenv("CRUCIBLE_EXTENDED")) programs.push_back(option_walk(t, 2));
    for (const program& p : programs) {
      ASSERT_FALSE(p.groups.empty()) << t.name;
      if (!texts.insert(to_text(p)).second) continue;
      auto src = emit_cpu(t, p);
      ASSERT_TRUE(src) << t.name << ": " << to_text(p) << ": " << src.message();
      tp.programs.push_back(p);
      tp.sources.push_back(*src);
    }
    all.push_back(std::move(tp));
  }
  compile_all(all);
  for (auto& tp : all) {
    ASSERT_NE(tp.handle, nullptr) << tp.tt.task.name << ": " << tp.log.substr(0, 4000);
    for (size_t k = 0; k < tp.programs.size(); ++k) {
      auto fn = reinterpret_cast<crucible_forward_fn>(
          dlsym(tp.handle, ("crucible_forward_" + std::to_string(k)).c_str()));
      ASSERT_NE(fn, nullptr);
      EXPECT_EQ(check_once(tp.tt.task, fn, 500 + k, false, false), "")
          << tp.tt.task.name << ": " << to_text(tp.programs[k]);
    }
  }
}

TEST(EmitCpu, RejectsWrongCallsAndIllegalPrograms) {
  const auto tt = testing::make("abi", {testing::in("x", {4, 6}), testing::in("b", {6}, true)},
                                {testing::op("add", {"b"}), testing::op("softmax")}, true);
  const task_spec& task = tt.task;
  program bad = eager_program(task);
  bad.groups[0].strategy = "tiled";
  EXPECT_FALSE(emit_cpu(task, bad));
  auto src = emit_cpu(task, eager_program(task));
  ASSERT_TRUE(src) << src.message();
  std::string log;
  void* h = compile("abi", *src, log);
  ASSERT_NE(h, nullptr) << log;
  auto fn = reinterpret_cast<crucible_forward_fn>(dlsym(h, "crucible_forward"));
  ASSERT_NE(fn, nullptr);
  std::vector<float> x(24, 1.0f), b(6, 0.5f), y(24);
  cru_tensor in[2] = {view(x, {4, 6}), view(b, {6})};
  cru_tensor out = view(y, {4, 6});
  EXPECT_EQ(fn(nullptr, in, 2, &out, 1), 0);  // a null context is fine on the CPU
  EXPECT_NE(fn(nullptr, in, 1, &out, 1), 0);
  EXPECT_NE(fn(nullptr, in, 2, &out, 2), 0);
  cru_tensor wrong = in[0];
  wrong.shape[1] = 5;
  cru_tensor in2[2] = {wrong, in[1]};
  EXPECT_NE(fn(nullptr, in2, 2, &out, 1), 0);
  in2[0] = in[0];
  in2[0].dtype = CRU_FLOAT64;
  EXPECT_NE(fn(nullptr, in2, 2, &out, 1), 0);
  in2[0] = in[0];
  in2[0].stride[0] = 7;  // not contiguous
  EXPECT_NE(fn(nullptr, in2, 2, &out, 1), 0);
  cru_tensor out_bad = view(y, {24});
  EXPECT_NE(fn(nullptr, in, 2, &out_bad, 1), 0);
  // Only the headers the emitter promises.
  for (const char* banned :
       {"<vector>", "<algorithm>", "<thread>", "<chrono>", "static float", "static double"})
    EXPECT_EQ(src->find(banned), std::string::npos) << banned;
}

TEST(EmitCpu, PolyMathIsAccurateOverTheFloatRange) {
  const std::string src = "#include <cmath>\n#include <cstdint>\n#include <cstring>\n" +
                          cpu_poly_math_source() +
                          "extern \"C\" float f_exp(float x) { return cru_exp(x); }\n"
                          "extern \"C\" float f_tanh(float x) { return cru_tanh(x); }\n"
                          "extern \"C\" float f_erf(float x) { return cru_erf(x); }\n"
                          "extern \"C\" float f_softplus(float x) { return cru_softplus(x); }\n";
  std::string log;
  void* h = compile("poly", src, log);
  ASSERT_NE(h, nullptr) << log;
  struct fn_case {
    const char* name;
    double (*ref)(double);
    double lo, hi;
  };
  const fn_case cases[] = {
      {"f_exp", [](double x) { return std::exp(x); }, -120, 100},
      {"f_tanh", [](double x) { return std::tanh(x); }, -30, 30},
      {"f_erf", [](double x) { return std::erf(x); }, -8, 8},
      {"f_softplus", [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, -120, 1000},
  };
  for (const auto& c : cases) {
    auto f = reinterpret_cast<float (*)(float)>(dlsym(h, c.name));
    ASSERT_NE(f, nullptr);
    double worst = 0;
    for (int i = 0; i <= 400000; ++i) {
      const float x = static_cast<float>(c.lo + (c.hi - c.lo) * i / 400000.0);
      const double want = c.ref(x), got = f(x);
      if (std::fabs(want) > 3.4028234e38) {
        EXPECT_TRUE(std::isinf(got)) << c.name << "(" << x << ")";
        continue;
      }
      ASSERT_TRUE(std::isfinite(got)) << c.name << "(" << x << ")";
      if (std::fabs(want) > 1e-30) worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    }
    EXPECT_LT(worst, 1e-6) << c.name;
    for (float tiny : {1e-8f, -1e-6f, 3e-4f})
      EXPECT_NEAR(f(tiny), c.ref(tiny), 1e-6 * std::fabs(c.ref(tiny)) + 1e-30)
          << c.name << "(" << tiny << ")";
  }
}

}  // namespace
}  // namespace crucible::kernels
