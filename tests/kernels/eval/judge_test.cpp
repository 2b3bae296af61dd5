#include "kernels/verify/judge.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "eval_test_support.hpp"

namespace crucible::kernels {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::string> flags_of(const std::string& src) {
  return static_source_flags(src);
}

TEST(StaticFlags, CleanCandidateHasNone) {
  std::vector<std::string> evidence;
  auto flags = static_source_flags(test::candidate_source("fused_bias_scale_relu"), &evidence);
  EXPECT_TRUE(flags.empty()) << ::testing::PrintToString(evidence);
}

TEST(StaticFlags, ThreadsWithLineEvidence) {
  std::vector<std::string> evidence;
  auto flags = static_source_flags("int a;\n\nvoid f() {\n  std::thread t(g);\n}\n", &evidence);
  ASSERT_TRUE(has(flags, "spawns_thread"));
  ASSERT_FALSE(evidence.empty());
  EXPECT_EQ(evidence[0], "spawns_thread: line 4: std::thread t(g);");
  EXPECT_TRUE(has(flags_of("void f() { pthread_create(&t, 0, run, 0); }"), "spawns_thread"));
  EXPECT_TRUE(has(flags_of("void f() { auto fut = std::async(std::launch::async, g); }"), "spawns_thread"));
  EXPECT_TRUE(has(flags_of("void f() { if (fork() == 0) g(); }"), "spawns_thread"));
  EXPECT_TRUE(has(flags_of(test::candidate_source("deferred_thread")), "spawns_thread"));
}

TEST(StaticFlags, Clocks) {
  EXPECT_TRUE(has(flags_of("auto t = std::chrono::steady_clock::now();"), "reads_clock"));
  EXPECT_TRUE(has(flags_of("void f() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); }"), "reads_clock"));
  EXPECT_TRUE(has(flags_of("void f() { timeval tv; gettimeofday(&tv, 0); }"), "reads_clock"));
  EXPECT_TRUE(has(flags_of("unsigned long long c = __rdtsc();"), "reads_clock"));
  EXPECT_TRUE(has(flags_of("void f() { asm volatile(\"rdtsc\" : \"=a\"(lo), \"=d\"(hi)); }"), "reads_clock"));
}

TEST(StaticFlags, StaticStateButNotStaticFunctionsOrConstantTables) {
  // Mutable state that survives a call.
  EXPECT_TRUE(has(flags_of("int f() { static int calls = 0; return ++calls; }"), "static_state"));
  EXPECT_TRUE(has(flags_of("float cache[1024];\nint f() { return 0; }"), "static_state"));
  EXPECT_TRUE(has(flags_of("namespace { std::unordered_map<const void*, std::vector<float>> memo; }"),
                  "static_state"));
  EXPECT_TRUE(has(flags_of("static std::vector<float> buf{1, 2};"), "static_state"));
  EXPECT_TRUE(has(flags_of("struct S { static int hits; };"), "static_state"));
  EXPECT_TRUE(has(flags_of("void f() { thread_local float scratch[64]; }"), "static_state"));
  EXPECT_TRUE(has(flags_of(test::candidate_source("pointer_cache")), "static_state"));

  // Not state: functions, constants, types, locals.
  std::vector<std::string> evidence;
  auto flags = static_source_flags(R"(
#include <crucible_abi.h>
static inline float gelu(float v) { return v; }
static float helper(const float* x, int n);
constexpr float kTable[4] = {1, 2, 3, 4};
static const float kLut[] = {0.5f, 0.25f};
namespace {
constexpr int kBlock = 64;
inline int round_up(int a, int b) { return (a + b - 1) / b * b; }
struct tile { float v[16]; int n; };
}
template <int N> static void unrolled(float* out) { for (int i = 0; i < N; ++i) out[i] = 0; }
extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* in, int32_t n, cru_tensor* out, int32_t m) {
  static constexpr float two = 2.0f;
  static const int lanes = 8;
  float local[16] = {0};
  tile t{};
  auto body = [&](int i) { local[i] = two * lanes; };
  for (int i = 0; i < 16; ++i) { body(i); }
  return 0;
}
)",
                                   &evidence);
  EXPECT_FALSE(has(flags, "static_state")) << ::testing::PrintToString(evidence);
}

TEST(StaticFlags, LoadingSystemAndReference) {
  EXPECT_TRUE(has(flags_of("#include <dlfcn.h>\nvoid* h = dlopen(\"libtorch_cpu.so\", RTLD_NOW);"),
                  "dynamic_loading"));
  EXPECT_TRUE(has(flags_of("void f() { dlsym(RTLD_DEFAULT, \"x\"); }"), "dynamic_loading"));
  EXPECT_TRUE(has(flags_of("void f() { system(\"ls\"); }"), "system_call"));
  EXPECT_TRUE(has(flags_of("void f() { FILE* p = popen(\"ls\", \"r\"); }"), "system_call"));
  EXPECT_TRUE(has(flags_of("void f() { execvp(argv[0], argv); }"), "system_call"));
  EXPECT_TRUE(has(flags_of("#include <torch/torch.h>\n"), "calls_reference"));
  EXPECT_TRUE(has(flags_of("void f() { auto y = at::relu(x); }"), "calls_reference"));
  EXPECT_TRUE(has(flags_of("void f() { torch::Tensor t; }"), "calls_reference"));
  EXPECT_TRUE(has(flags_of("void f() { FILE* f = fopen(\"/proc/self/maps\", \"r\"); }"), "file_access"));
}

TEST(StaticFlags, CommentsAndStringsAreNotCode) {
  std::vector<std::string> evidence;
  auto flags = static_source_flags(R"(// No std::thread here, nor std::chrono.
/* dlopen(), system(), at::add, static int x; */
const char* doc = "std::thread and clock_gettime are banned";
extern "C" int crucible_forward(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t) {
  return 0;  // fork() would be flagged
}
)",
                                   &evidence);
  EXPECT_TRUE(flags.empty()) << ::testing::PrintToString(evidence);
}

// --- judge ---

candidate cand_with(const std::string& source) {
  candidate c;
  c.id = "cand-1";
  c.source = source;
  return c;
}

compile_result compiled_ok() {
  compile_result c;
  c.ok = true;
  c.artifact = "/tmp/x.so";
  return c;
}

bench_result bench_ok(double speedup) {
  bench_result b;
  b.status = "ok";
  b.correct = true;
  b.timed = true;
  b.speedup_vs_eager = speedup;
  return b;
}

TEST(Judge, Outcomes) {
  auto clean = cand_with(test::candidate_source("fused_bias_scale_relu"));

  compile_result failed;
  failed.log = "candidate.cpp:3:1: error: expected ';'\n";
  auto v = judge(clean, failed, {});
  EXPECT_EQ(v.outcome, "compile_error");
  EXPECT_EQ(v.reward, 0.0);

  bench_result crash;
  crash.status = "crash";
  crash.error = "worker died: signal 11 (SIGSEGV)";
  v = judge(clean, compiled_ok(), crash);
  EXPECT_EQ(v.outcome, "crash");
  EXPECT_NE(v.evidence.at(0).find("SIGSEGV"), std::string::npos);

  bench_result timeout;
  timeout.status = "timeout";
  EXPECT_EQ(judge(clean, compiled_ok(), timeout).outcome, "timeout");

  bench_result load;
  load.status = "load_error";
  load.error = "no crucible_forward";
  EXPECT_EQ(judge(clean, compiled_ok(), load).outcome, "error");

  auto wrong = bench_ok(2.0);
  wrong.correct = false;
  v = judge(clean, compiled_ok(), wrong);
  EXPECT_EQ(v.outcome, "incorrect");
  EXPECT_EQ(v.reward, 0.0);
  EXPECT_EQ(v.speedup, 0.0);

  v = judge(clean, compiled_ok(), bench_ok(2.5));
  EXPECT_EQ(v.outcome, "pass");
  EXPECT_DOUBLE_EQ(v.speedup, 2.5);
  EXPECT_DOUBLE_EQ(v.reward, 2.5);
  EXPECT_EQ(v.candidate_id, "cand-1");
  EXPECT_EQ(v.content_hash.size(), 64u);

  judge_options capped;
  capped.max_believed_speedup = 10;
  EXPECT_DOUBLE_EQ(judge(clean, compiled_ok(), bench_ok(1e6), capped).speedup, 10.0);
}

TEST(Judge, DynamicEvidenceIsAHackStaticFeaturesAloneAreNot) {
  auto clean = cand_with(test::candidate_source("fused_bias_scale_relu"));
  auto mutated = bench_ok(3.0);
  mutated.evidence = {"input_mutated:x"};
  mutated.notes = {"input_mutated:x: input 'x' differs from its pristine copy"};
  judge_options opts;
  opts.penalty = -0.5;
  auto v = judge(clean, compiled_ok(), mutated, opts);
  EXPECT_EQ(v.outcome, "hack");
  EXPECT_TRUE(has(v.flags, "input_mutated"));
  EXPECT_TRUE(has(v.evidence, "input_mutated:x"));
  EXPECT_DOUBLE_EQ(v.reward, -0.5);
  EXPECT_EQ(v.speedup, 0.0);

  // Threads in the source, but the worker saw nothing (its sandbox refused them): the static feature is
  // listed as evidence, the verdict rests on what the evaluation measured.
  auto threaded = cand_with(test::candidate_source("deferred_thread"));
  v = judge(threaded, compiled_ok(), bench_ok(5.0));
  EXPECT_EQ(v.outcome, "pass");
  EXPECT_TRUE(v.flags.empty());
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const std::string& e) {
    return e.rfind("static feature spawns_thread:", 0) == 0;
  }));
  EXPECT_DOUBLE_EQ(v.reward, 5.0);
}

}  // namespace
}  // namespace crucible::kernels

// CUDA: a stream of one's own, the GPU's clocks and device globals are flagged; library handles are not.
TEST(StaticFlags, CudaStreamsClocksAndDeviceGlobals) {
  std::vector<std::string> ev;
  auto flags = crucible::kernels::static_source_flags(
      "__device__ float cache[1024];\n"
      "__global__ void k(float* y) { long long t = clock64(); y[0] = t; }\n"
      "extern \"C\" int crucible_forward() {\n"
      "  cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);\n"
      "  return 0;\n}\n",
      &ev);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "creates_stream"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "reads_clock"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "static_state"), flags.end());
  auto clean = crucible::kernels::static_source_flags(
      "#include <cudnn.h>\n"
      "static cudnnHandle_t handle = nullptr;\n"
      "static cudnnTensorDescriptor_t x_desc;\n"
      "__device__ __forceinline__ float sq(float v) { return v * v; }\n"
      "__global__ void k(const float* x, float* y) { __shared__ float tile[256]; y[0] = sq(x[0]); }\n"
      "extern \"C\" int crucible_forward() {\n"
      "  if (!handle) cudnnCreate(&handle);\n"
      "  return 0;\n}\n");
  EXPECT_TRUE(clean.empty()) << (clean.empty() ? "" : clean.front());
}

// The verdict's vocabulary: one table, names round-trip, unknown names are unknown.
TEST(VerdictVocabulary, NamesRoundTripAndUnknownNamesAreNone) {
  using namespace crucible::kernels;
  for (auto o : {outcome::pass, outcome::incorrect, outcome::compile_error, outcome::crash, outcome::timeout,
                 outcome::hack, outcome::error, outcome::abandoned})
    EXPECT_EQ(parse_outcome(wire_name(o)), o) << wire_name(o);
  EXPECT_FALSE(parse_outcome("passed"));
  EXPECT_EQ(evidence_tag(evidence_kind::input_mutated, "x"), "input_mutated:x");
  EXPECT_EQ(parse_evidence("input_mutated:x"), evidence_kind::input_mutated);
  EXPECT_EQ(parse_evidence("sandbox_violation"), evidence_kind::sandbox_violation);
  EXPECT_FALSE(parse_evidence("static feature reads_clock:clock_gettime"));
  auto v = abandoned_verdict("c1", "h", "benchmark");
  EXPECT_TRUE(has_outcome(v, outcome::abandoned));
  EXPECT_EQ(v.evidence.front(), "run stopped during stage benchmark");
  v = pipeline_error_verdict("c2", "h", "no benchmarker answered");
  EXPECT_TRUE(has_outcome(v, outcome::error));
  EXPECT_DOUBLE_EQ(v.reward, 0.0);
}
