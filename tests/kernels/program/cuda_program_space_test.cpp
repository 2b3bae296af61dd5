// The CUDA program space: its own stable vocabulary (the CPU's unchanged), legal walks that replay, eager
// programs of library baselines, and emission of eager and random programs for every CUDA task.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "kernels/program/emit_cuda.hpp"
#include "kernels/program/emit_source.hpp"
#include "kernels/program/group_kinds.hpp"
#include "kernels/program/program_space.hpp"
#include "kernels/task/task_loader.hpp"
#include "tests/kernels/program/cuda_test_tasks.hpp"

namespace crucible::kernels {
namespace {

std::vector<task_spec> all_cuda_tasks() {
  auto tasks = testing::cuda_core_tasks();
  for (auto& t : testing::cuda_ops_tasks()) tasks.push_back(t);
  auto suite = load_task_suite(std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../kernels/tasks/cuda", "cuda");
  if (suite)
    for (auto& t : *suite) tasks.push_back(t);
  return tasks;
}

TEST(CudaProgramSpace, VocabularyIsStableUniqueAndSeparate) {
  const auto& v = vocabulary("cuda");
  EXPECT_EQ(&v, &vocabulary("cuda"));
  EXPECT_EQ(std::set<std::string>(v.slots.begin(), v.slots.end()).size(), v.slots.size());
  EXPECT_EQ(std::set<std::string>(v.choices.begin(), v.choices.end()).size(), v.choices.size());
  EXPECT_EQ(v.slots.front(), "rewrite:drop_redundant");
  const std::set<std::string> choices(v.choices.begin(), v.choices.end());
  for (const char* c : {"strategy:elementwise=vec4", "strategy:attention=flash", "strategy:gemm=cublas",
                        "knob:math=fast", "knob:threads=512", "fuse:conv2d=split", "fuse:mse_loss=fuse",
                        "fuse:elu=fuse", "strategy:loss=atomic"})
    EXPECT_TRUE(choices.count(c)) << c;
  // The CPU vocabulary knows none of the CUDA-only ops, strategies or knobs.
  const auto& cpu = vocabulary("cpu");
  const std::set<std::string> cpu_choices(cpu.choices.begin(), cpu.choices.end());
  for (const char* c : {"fuse:elu=fuse", "fuse:conv2d=split", "strategy:elementwise=vec4", "knob:math=fast"})
    EXPECT_FALSE(cpu_choices.count(c)) << c;
  EXPECT_TRUE(cpu_choices.count("strategy:gemm=blas"));
}

TEST(CudaProgramSpace, CpuRejectsCudaOnlyOpsAndCudaAcceptsThem) {
  for (const auto& t : testing::cuda_ops_tasks()) {
    EXPECT_FALSE(program_builder::create(t, "cpu")) << t.name;
    EXPECT_TRUE(program_builder::create(t, "cuda")) << t.name;
  }
  // A [C,1,1] side input broadcasts on cuda only.
  const auto t = testing::cuda_core_tasks().front();
  auto cpu = program_builder::create(t, "cpu");
  ASSERT_FALSE(cpu);
  EXPECT_NE(cpu.message().find("elu"), std::string::npos) << cpu.message();
}

TEST(CudaProgramSpace, EagerProgramIsOneGroupPerOpWithBaselines) {
  for (const auto& t : all_cuda_tasks()) {
    const program p = eager_program(t);  // the task's own target: cuda
    ASSERT_EQ(p.groups.size(), t.ops.size()) << t.name;
    EXPECT_TRUE(p.rewrites.empty());
    for (const auto& g : p.groups) {
      static const std::set<std::string> baselines = {"grid",       "block",    "cublas", "warp_dot",
                                                      "library",    "cudnn",    "direct", "two_pass",
                                                      "block_scan", "two_stage"};
      EXPECT_TRUE(baselines.count(g.strategy)) << t.name << ": " << g.strategy;
      for (const auto& [k, v] : g.knobs)
        EXPECT_TRUE((k == "threads" && v == "256") || (k == "math" && v == "accurate")) << k << "=" << v;
    }
    EXPECT_TRUE(validate_program(t, p, "cuda")) << t.name;
    EXPECT_EQ(eager_program(t, "cuda"), p);
  }
}

TEST(CudaProgramSpace, RandomWalksAreLegalReplayAndStayInTheVocabulary) {
  std::mt19937_64 rng(11);
  const auto& v = vocabulary("cuda");
  const std::set<std::string> slots(v.slots.begin(), v.slots.end()),
      choices(v.choices.begin(), v.choices.end());
  std::set<std::string> seen;
  for (const auto& t : all_cuda_tasks()) {
    for (int i = 0; i < 30; ++i) {
      auto b = program_builder::create(t, "cuda");
      ASSERT_TRUE(b) << t.name << ": " << b.message();
      while (!b->done()) {
        const decision d = b->next();
        ASSERT_FALSE(d.options.empty()) << d.slot;
        EXPECT_TRUE(slots.count(d.slot)) << d.slot;
        for (const auto& o : d.options) EXPECT_TRUE(choices.count(d.slot + "=" + o)) << d.slot << "=" << o;
        const auto& o = d.options[std::uniform_int_distribution<size_t>(0, d.options.size() - 1)(rng)];
        ASSERT_TRUE(b->choose(o));
        seen.insert(d.slot + "=" + o);
      }
      const program p = b->result();
      auto ds = decisions_of(t, p, "cuda");
      ASSERT_TRUE(ds) << t.name << ": " << to_text(p) << ": " << ds.message();
      ASSERT_EQ(ds->size(), b->chosen().size());
      for (size_t k = 0; k < ds->size(); ++k)
        EXPECT_EQ((*ds)[k].first.slot + "=" + (*ds)[k].second, b->chosen()[k]);
      auto back = parse_program(to_text(p));
      ASSERT_TRUE(back);
      EXPECT_TRUE(validate_program(t, *back, "cuda"));
    }
  }
  for (const char* c : {"strategy:attention=flash", "strategy:gemm=tiled", "strategy:row=online",
                        "strategy:elementwise=vec4", "rewrite:gemm_rowsum_to_gemv=yes", "knob:math=fast"})
    EXPECT_TRUE(seen.count(c)) << c;
}

TEST(CudaProgramSpace, LossTakesAPrologueButNoEpilogue) {
  const task_spec t =
      testing::cuda_task("loss_epi", {testing::in("x", {4, 5}), testing::in("t", {4, 5})},
                         {testing::op("tanh"), testing::op("mse_loss", {"t"}), testing::op("exp")});
  auto b = program_builder::create(t, "cuda");
  ASSERT_TRUE(b) << b.message();
  ASSERT_EQ(b->next().slot, "fuse:mse_loss");
  EXPECT_EQ(b->next().options.size(), 2u);
  ASSERT_TRUE(b->choose("fuse"));
  ASSERT_EQ(b->next().slot, "fuse:exp");
  EXPECT_EQ(b->next().options, std::vector<std::string>{"split"});
}

TEST(CudaProgramSpace, EagerAndRandomProgramsEmitForEveryTask) {
  std::mt19937_64 rng(5);
  for (const auto& t : all_cuda_tasks()) {
    std::vector<program> programs = {eager_program(t)};
    for (int i = 0; i < 20; ++i) programs.push_back(random_program(t, rng, "cuda"));
    for (const auto& p : programs) {
      auto src = emit_source("cuda", t, p);
      ASSERT_TRUE(src) << t.name << ": " << to_text(p) << ": " << src.message();
      EXPECT_NE(src->find("extern \"C\" int crucible_forward"), std::string::npos);
      EXPECT_EQ(src->find("cudaDeviceSynchronize"), std::string::npos);
      EXPECT_EQ(src->find("cudaStreamSynchronize"), std::string::npos);
      const bool blas = src->find("cublas") != std::string::npos;
      EXPECT_EQ(blas, src->find("#include <cublas_v2.h>") != std::string::npos) << t.name;
    }
  }
  EXPECT_FALSE(emit_source("tpu", testing::cuda_core_tasks().front(), {}));
  EXPECT_FALSE(emit_cuda(testing::cuda_core_tasks().front(), program{}));
}

}  // namespace
}  // namespace crucible::kernels
