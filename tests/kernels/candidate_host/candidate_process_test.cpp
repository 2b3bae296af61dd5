// The CPU candidate's process (kernels/candidate_host/, kernels/eval_worker/candidate_process.*) driven
// directly: what the sandbox refuses, what the census after loading sees, and what the worker learns from
// outside (CPU time, writes to read-only inputs, crashes, hangs, work between calls). Each case is a real
// artifact compiled with the candidates' own flags and loaded into a real crucible-candidate-host.
#include "kernels/eval_worker/candidate_process.hpp"

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/eval/compiler.hpp"

namespace crucible::kernels {
namespace {

std::string host_path() {
  return std::string(CRUCIBLE_BINARY_DIR) + "/crucible-candidate-host";
}

std::string artifact(const std::string& name, const std::string& body) {
  compiler_options o;
  o.cache_dir = std::string(CRUCIBLE_BINARY_DIR) + "/eval-test-cache";
  auto r = compile_source(name, "#include <crucible_abi.h>\n" + body, o);
  EXPECT_TRUE(r.ok) << r.log;
  return r.artifact;
}

// out[i] = 2 * in[i] over n floats, with `extra` run first inside the call.
std::string doubling(const std::string& includes, const std::string& extra, const std::string& globals = "") {
  return includes + "\n" + globals + R"(
extern "C" int crucible_forward(const cru_context*, const cru_tensor* in, int32_t, cru_tensor* out, int32_t) {
  )" + extra +
         R"(
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = 2 * x[i];
  return 0;
})";
}

struct fixture {
  shared_region inputs, outputs;
  candidate_process host;
  std::vector<cru_tensor> in;
  cru_tensor out{};
  static constexpr int64_t n = 1 << 16;

  std::string start(const std::string& so) {
    EXPECT_EQ(inputs.create(n * 4, "test-inputs"), "");
    EXPECT_EQ(outputs.create(n * 4, "test-outputs"), "");
    auto* x = reinterpret_cast<float*>(inputs.base());
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 97);
    cru_tensor t{};
    t.data = inputs.base();
    t.dtype = CRU_FLOAT32;
    t.ndim = 1;
    t.shape[0] = n;
    t.stride[0] = 1;
    in = {t};
    out = t;
    out.data = outputs.base();
    return host.start(host_path(), so, inputs, outputs);
  }
  bool doubled() const {
    auto* x = reinterpret_cast<const float*>(inputs.base());
    auto* y = reinterpret_cast<const float*>(outputs.base());
    for (int64_t i = 0; i < n; ++i)
      if (y[i] != 2 * x[i]) return false;
    return true;
  }
};

TEST(CandidateProcess, AnHonestCallComputesOnSharedBuffersAndIsTimedFromOutside) {
  fixture f;
  ASSERT_EQ(f.start(artifact("honest", doubling("", ""))), "");
  EXPECT_EQ(f.host.threads_after_load(), 1);
  EXPECT_FALSE(f.host.children_after_load());
  auto c = f.host.call(f.in, f.out, 10);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(f.doubled());
  EXPECT_EQ(c.denied, 0);
  EXPECT_GT(c.cpu_ms, 0.0);
  auto null = f.host.null_call(10);
  EXPECT_TRUE(null.ok);
  EXPECT_LT(f.host.max_outside_cpu_ms(), 0.5) << "an idle host uses no CPU between calls";
}

TEST(CandidateProcess, TheSandboxRefusesFilesSocketsAndExecutableMemory) {
  fixture f;
  ASSERT_EQ(
      f.start(artifact("forbidden", doubling("#include <fcntl.h>\n#include <sys/mman.h>\n#include "
                                             "<sys/socket.h>\n#include <sys/syscall.h>\n#include <unistd.h>",
                                             R"(
  int fd = open("/etc/hostname", O_RDONLY);
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  void* exec = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  long raw = syscall(SYS_getppid);
  if (fd >= 0 || sock >= 0 || exec != MAP_FAILED || raw > 0) return 9;)"))),
      "");
  auto c = f.host.call(f.in, f.out, 10);
  ASSERT_TRUE(c.ok) << c.error;  // every attempt failed with EPERM, so the candidate went on and computed
  EXPECT_TRUE(f.doubled());
  EXPECT_EQ(c.denied, 4) << c.denied_names;
  for (const char* name : {"openat", "socket", "mmap", "getppid"})
    EXPECT_NE(c.denied_names.find(name), std::string::npos) << name << " in " << c.denied_names;
}

// Either the refusal's SIGSYS ends the process (glibc blocks every signal around clone for a thread) or the
// first step fails with EPERM. Either way the attempt is seen and nothing was started.
TEST(CandidateProcess, AThreadOrAProcessIsRefused) {
  for (const char* attempt :
       {"pthread_t t; pthread_create(&t, nullptr, [](void*) -> void* { return nullptr; }, nullptr);",
        "if (fork() == 0) _exit(0);"}) {
    fixture f;
    ASSERT_EQ(f.start(artifact("spawns", doubling("#include <pthread.h>\n#include <unistd.h>", attempt))),
              "");
    auto c = f.host.call(f.in, f.out, 10);
    if (c.ok) {
      // Refused at its first step: clone for fork(); for a thread, the guard page of its stack (mprotect).
      EXPECT_GE(c.denied, 1) << attempt;
      EXPECT_FALSE(c.denied_names.empty()) << attempt;
      EXPECT_EQ(f.host.threads(), 1);
    } else {
      EXPECT_TRUE(c.sandbox_killed) << attempt << ": " << c.error;
      EXPECT_FALSE(f.host.running());
    }
  }
}

TEST(CandidateProcess, InitialisersCannotStartThreadsHandlersOrTimers) {
  {
    fixture f;
    ASSERT_EQ(f.start(artifact("ctor_timer", doubling("#include <sys/time.h>\n#include <signal.h>", "", R"(
static void tick(int) {}
__attribute__((constructor)) static void at_load() {
  signal(SIGALRM, tick);
  itimerval every{{0, 1000}, {0, 1000}};
  setitimer(ITIMER_REAL, &every, nullptr);
})"))),
              "");
    EXPECT_EQ(f.host.threads_after_load(), 1);
    auto c = f.host.call(f.in, f.out, 10);
    ASSERT_TRUE(c.ok) << c.error;
    // Refused at load time, reported with the first round trip.
    EXPECT_EQ(c.denied, 2) << c.denied_names;
    EXPECT_NE(c.denied_names.find("rt_sigaction"), std::string::npos) << c.denied_names;
    EXPECT_NE(c.denied_names.find("setitimer"), std::string::npos) << c.denied_names;
  }
  {
    fixture f;
    auto err = f.start(artifact("ctor_thread", doubling("#include <pthread.h>", "", R"(
__attribute__((constructor)) static void at_load() {
  pthread_t t;
  pthread_create(&t, nullptr, [](void*) -> void* { for (;;) {} }, nullptr);
})")));
    EXPECT_TRUE(f.host.sandbox_killed_at_load()) << err;
  }
}

TEST(CandidateProcess, AWriteToAnInputIsReportedWithItsOffset) {
  fixture f;
  ASSERT_EQ(
      f.start(artifact("writes_input",
                       doubling("", "const_cast<float*>(static_cast<const float*>(in[0].data))[100] = 0;"))),
      "");
  auto c = f.host.call(f.in, f.out, 10);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.input_write, 400);
  EXPECT_FALSE(f.host.running());
}

TEST(CandidateProcess, CrashesAndHangsEndTheHostNotTheWorker) {
  {
    fixture f;
    ASSERT_EQ(f.start(artifact("segv", doubling("", "*static_cast<volatile int*>(nullptr) = 1;"))), "");
    auto c = f.host.call(f.in, f.out, 10);
    EXPECT_TRUE(c.crashed);
    EXPECT_NE(c.error.find("SIGSEGV"), std::string::npos) << c.error;
  }
  {
    fixture f;
    ASSERT_EQ(f.start(artifact("spin", doubling("", "for (volatile int k = 0;; k = k + 1) {}"))), "");
    auto c = f.host.call(f.in, f.out, 0.3);
    EXPECT_TRUE(c.hung);
    EXPECT_FALSE(f.host.running());
  }
  {
    fixture f;
    EXPECT_NE(
        f.start(artifact("no_entry", "extern \"C\" int other() { return 0; }")).find("crucible_forward"),
        std::string::npos);
  }
}

TEST(CandidateProcess, TheInputMappingCannotBeMadeWritable) {
  fixture f;
  ASSERT_EQ(f.start(artifact("mprotect_input", doubling("#include <sys/mman.h>\n#include <cstdint>", R"(
  auto page = reinterpret_cast<uintptr_t>(in[0].data) & ~uintptr_t{4095};
  if (mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE) == 0) return 7;)"))),
            "");
  auto c = f.host.call(f.in, f.out, 10);
  EXPECT_TRUE(c.ok) << c.error;
}

}  // namespace
}  // namespace crucible::kernels

namespace crucible::kernels {
namespace {

TEST(CandidateProcess, CallsToTheAllocatorsKnobsAreRecorded) {
  fixture f;
  ASSERT_EQ(f.start(artifact("probes", doubling("#include <malloc.h>\n#include <unistd.h>",
                                                "mallopt(M_PERTURB, 0x55); (void)sbrk(0);"))),
            "");
  auto c = f.host.call(f.in, f.out, 10);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.probes, "mallopt, sbrk");
  EXPECT_TRUE(f.doubled());
  c = f.host.null_call(10);
  EXPECT_EQ(c.probes, "") << "recorded once, with the call that made them";
}

TEST(CandidateProcess, CodeCannotBePatched) {
  fixture f;
  ASSERT_EQ(
      f.start(artifact("patch", doubling("#include <sys/mman.h>\n#include <cstdint>\n#include <cstdlib>", R"(
  auto page = reinterpret_cast<uintptr_t>(&abs) & ~uintptr_t{4095};
  if (mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) return 7;
  if (mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE) == 0) return 8;)"))),
      "");
  auto c = f.host.call(f.in, f.out, 10);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.denied, 2) << c.denied_names;
}

}  // namespace
}  // namespace crucible::kernels
