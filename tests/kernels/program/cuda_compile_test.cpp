// Emitted CUDA sources compile with nvcc under the compiler stage's flags (compile only: this machine may
// have no GPU; the lead runs emitted candidates on the GPU machine). Per task: the eager program, the walk
// that takes every rewrite, fuses all it can and picks each slot's second option, and 3 random programs.
// Programs of several tasks share one translation unit (each in its own namespace: nvcc's fixed cost per
// file dominates), compiled two at a time. Skips without nvcc
// ($CRUCIBLE_NVCC or /usr/local/cuda/bin/nvcc). Also: emitted sources pass the verifier's static checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/program/emit_cuda.hpp"
#include "kernels/program/group_kinds.hpp"
#include "kernels/program/program_space.hpp"
#include "kernels/program/rewritten_chain.hpp"
#include "kernels/task/task_loader.hpp"
#include "kernels/verify/judge.hpp"
#include "tests/kernels/program/cuda_test_tasks.hpp"

namespace crucible::kernels {
namespace {

const std::string source_root = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../..";

std::string find_nvcc() {
  if (const char* e = std::getenv("CRUCIBLE_NVCC"); e && *e) return access(e, X_OK) == 0 ? e : "";
  return access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "";
}

// Whether every op of the task is of an emit-core kind.
bool core_task(const task_spec& t) {
  for (const auto& op : t.ops) {
    switch (kind_of(chain_op{op.op, op.args, op.attrs, {}})) {
      case chain_op_kind::elementwise:
      case chain_op_kind::row_reduce:
      case chain_op_kind::row_norm:
      case chain_op_kind::gemm:
      case chain_op_kind::bmm:
      case chain_op_kind::attention:
        break;
      default:
        return false;
    }
  }
  return true;
}

std::vector<task_spec> core_tasks() {
  auto tasks = testing::cuda_core_tasks();
  auto suite = load_task_suite(source_root + "/kernels/tasks/cuda", "cuda");
  if (suite)
    for (auto& t : *suite)
      if (core_task(t)) tasks.push_back(t);
  return tasks;
}

// Every rewrite, fuse where legal, otherwise option `k` (or the last) of each slot.
program option_walk(const task_spec& t, size_t k) {
  auto b = program_builder::create(t, "cuda");
  while (b && !b->done()) {
    const auto& d = b->next();
    const bool fuse_or_rewrite = d.slot.rfind("fuse:", 0) == 0 || d.slot.rfind("rewrite:", 0) == 0;
    b->choose(fuse_or_rewrite ? d.options.back() : d.options[std::min(k, d.options.size() - 1)]);
  }
  return b ? b->result() : program{};
}

struct unit {
  std::string name, source, log;
  std::vector<std::string> programs;
  bool cudnn = false;
  int rc = -1;
};

// One translation unit of several programs: the #includes once, each program in its own namespace with
// crucible_forward renamed.
void add_program(unit& u, const std::string& src, const std::string& text) {
  const int k = static_cast<int>(u.programs.size());
  std::istringstream in(src);
  std::string line, body;
  while (std::getline(in, line)) {
    if (line.rfind("#include", 0) == 0) {
      if (u.source.find(line) == std::string::npos) u.source = line + "\n" + u.source;
      u.cudnn |= line.find("cudnn") != std::string::npos;
      continue;
    }
    const std::string fwd = "crucible_forward(";
    if (auto at = line.find(fwd); at != std::string::npos)
      line.replace(at, fwd.size() - 1, "crucible_forward_" + std::to_string(k));
    body += line + "\n";
  }
  u.source += "namespace p" + std::to_string(k) + " {\n" + body + "}\n";
  u.programs.push_back(text);
}

TEST(CudaCompile, EmittedSourcesCompileWithNvcc) {
  const std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found ($CRUCIBLE_NVCC or /usr/local/cuda/bin/nvcc)";
  char tmpl[] = "/tmp/crucible_cuda_test_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  ASSERT_NE(dir, nullptr);
  std::mt19937_64 rng(23);
  std::vector<unit> units;
  const auto tasks = core_tasks();
  const size_t per_unit = (tasks.size() + 7) / 8;  // about 8 files in all
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const auto& t = tasks[ti];
    if (ti % per_unit == 0) {
      units.emplace_back();
      units.back().name = "unit" + std::to_string(units.size() - 1);
    }
    unit& u = units.back();
    std::set<std::string> texts;
    std::vector<program> programs = {eager_program(t), option_walk(t, 1)};
    for (int i = 0; i < 3; ++i) programs.push_back(random_program(t, rng, "cuda"));
    for (const auto& p : programs) {
      if (!texts.insert(to_text(p)).second) continue;
      auto src = emit_cuda(t, p);
      ASSERT_TRUE(src) << t.name << ": " << to_text(p) << ": " << src.message();
      add_program(u, *src, t.name + ": " + to_text(p));
    }
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < units.size();) {
      auto& u = units[i];
      const std::string base = std::string(dir) + "/" + u.name;
      std::ofstream(base + ".cu") << u.source;
      const std::string cmd = nvcc + " -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC -shared -I" + source_root +
                              "/kernels/abi " + base + ".cu -o " + base + ".so -lcublas" +
                              (u.cudnn ? " -lcudnn" : "") + " > " + base + ".log 2>&1";
      u.rc = std::system(cmd.c_str());
      std::ifstream f(base + ".log");
      u.log.assign(std::istreambuf_iterator<char>(f), {});
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  for (const auto& u : units) {
    std::string programs;
    for (size_t k = 0; k < u.programs.size(); ++k)
      programs += "\n  p" + std::to_string(k) + ": " + u.programs[k];
    EXPECT_EQ(u.rc, 0) << u.name << " (" << std::string(dir) << "/" << u.name << ".cu)" << programs << "\n"
                       << u.log.substr(0, 6000);
  }
}

TEST(CudaCompile, EmittedSourcesPassTheStaticChecks) {
  std::mt19937_64 rng(3);
  for (const auto& t : core_tasks()) {
    for (const auto& p : {eager_program(t), option_walk(t, 1), random_program(t, rng, "cuda")}) {
      auto src = emit_cuda(t, p);
      ASSERT_TRUE(src) << t.name << ": " << src.message();
      std::vector<std::string> evidence;
      const auto flags = static_source_flags(*src, &evidence);
      std::string ev;
      for (const auto& e : evidence) ev += "\n  " + e;
      EXPECT_TRUE(flags.empty()) << t.name << ": " << to_text(p) << ev;
    }
  }
}

}  // namespace
}  // namespace crucible::kernels
