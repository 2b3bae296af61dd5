#include <gtest/gtest.h>

#include <random>
#include <set>

#include "kernels/program/program_space.hpp"
#include "kernels/program/rewrites.hpp"
#include "tests/kernels/program/test_tasks.hpp"

namespace crucible::kernels {
namespace {

using testing::in;
using testing::make;
using testing::op;
using testing::test_tasks;

std::set<std::string> vocab_slots() {
  const auto& v = vocabulary();
  return {v.slots.begin(), v.slots.end()};
}
std::set<std::string> vocab_choices() {
  const auto& v = vocabulary();
  return {v.choices.begin(), v.choices.end()};
}

TEST(ProgramSpace, VocabularyIsStableAndUnique) {
  const auto& v = vocabulary();
  EXPECT_EQ(vocab_slots().size(), v.slots.size());
  EXPECT_EQ(vocab_choices().size(), v.choices.size());
  EXPECT_EQ(v.slots.front(), "rewrite:drop_redundant");
  EXPECT_EQ(&vocabulary(), &vocabulary());
  EXPECT_TRUE(vocabulary("no_such_target").slots.empty());
}

TEST(ProgramSpace, EagerProgramIsOneGroupPerOpWithBaselines) {
  for (const auto& tt : test_tasks()) {
    const program p = eager_program(tt.task);
    ASSERT_EQ(p.groups.size(), tt.task.ops.size()) << tt.task.name;
    EXPECT_TRUE(p.rewrites.empty());
    for (size_t i = 0; i < p.groups.size(); ++i) {
      const auto& g = p.groups[i];
      EXPECT_EQ(g.first, static_cast<int>(i));
      EXPECT_EQ(g.last, static_cast<int>(i));
      EXPECT_TRUE(g.strategy == "loop" || g.strategy == "multi_pass" || g.strategy == "blas") << g.strategy;
      for (const auto& [k, v] : g.knobs)
        EXPECT_TRUE((k == "unroll" && v == "1") || (k == "math" && v == "libm") || (k == "acc" && v == "1") ||
                    (k == "block_rows" && v == "0"))
            << k << "=" << v;
    }
    EXPECT_TRUE(validate_program(tt.task, p)) << tt.task.name;
  }
}

TEST(ProgramSpace, RandomWalksAreLegalReplayAndStayInTheVocabulary) {
  std::mt19937_64 rng(7);
  const auto slots = vocab_slots();
  const auto choices = vocab_choices();
  std::set<std::string> seen;
  for (const auto& tt : test_tasks()) {
    for (int i = 0; i < 40; ++i) {
      auto b = program_builder::create(tt.task);
      ASSERT_TRUE(b) << b.message();
      while (!b->done()) {
        const decision d = b->next();
        ASSERT_FALSE(d.options.empty()) << d.slot;
        EXPECT_TRUE(slots.count(d.slot)) << d.slot;
        for (const auto& o : d.options) EXPECT_TRUE(choices.count(d.slot + "=" + o)) << d.slot << "=" << o;
        // Anything not offered is refused, and the builder is unchanged by the refusal.
        EXPECT_FALSE(b->choose("not_an_option"));
        EXPECT_EQ(b->next().slot, d.slot);
        const auto& o = d.options[std::uniform_int_distribution<size_t>(0, d.options.size() - 1)(rng)];
        ASSERT_TRUE(b->choose(o));
        seen.insert(d.slot + "=" + o);
      }
      EXPECT_FALSE(b->choose("split"));
      const program p = b->result();
      // decisions_of replays exactly what the builder chose.
      auto ds = decisions_of(tt.task, p);
      ASSERT_TRUE(ds) << tt.task.name << ": " << to_text(p) << ": " << ds.message();
      ASSERT_EQ(ds->size(), b->chosen().size());
      for (size_t k = 0; k < ds->size(); ++k)
        EXPECT_EQ((*ds)[k].first.slot + "=" + (*ds)[k].second, b->chosen()[k]);
      EXPECT_TRUE(validate_program(tt.task, p));
      auto back = parse_program(to_text(p));
      ASSERT_TRUE(back);
      EXPECT_EQ(*back, p);
    }
  }
  // The test tasks reach every rewrite and every strategy/knob option of the vocabulary.
  for (const auto& c : vocabulary().choices) {
    if (c.rfind("fuse:", 0) == 0) continue;  // fuse slots are per op: not every op is in a test task twice
    EXPECT_TRUE(seen.count(c)) << "never offered: " << c;
  }
}

TEST(ProgramSpace, RandomProgramIsDeterministicInTheSeed) {
  for (const auto& tt : test_tasks()) {
    std::mt19937_64 a(3), b(3);
    EXPECT_EQ(random_program(tt.task, a), random_program(tt.task, b));
  }
}

TEST(ProgramSpace, CopiesOfABuilderAreIndependent) {
  auto b = program_builder::create(test_tasks()[0].task);
  ASSERT_TRUE(b);
  program_builder c = *b;
  ASSERT_TRUE(c.choose(c.next().options.back()));
  EXPECT_EQ(b->chosen().size(), 0u);
  EXPECT_EQ(c.chosen().size(), 1u);
}

TEST(ProgramSpace, IllegalProgramsAreRejectedWithReasons) {
  const auto tt =
      make("t", {in("x", {4, 8}), in("w", {8, 8}, true)},
           {op("matmul", {"w"}), op("add_scalar", {}, {{"s", 1.0}}), op("row_sum"), op("exp")}, false);
  const task_spec& t = tt.task;
  auto bad = [&](const std::string& text) {
    auto p = parse_program(text);
    EXPECT_TRUE(p) << text;
    auto st = validate_program(t, *p);
    EXPECT_FALSE(st) << text;
    return st ? std::string() : st.message();
  };
  // gemm then a row op cannot fuse; a rewrite that does not match; a strategy of the wrong kind; a missing
  // knob; an extra knob; a gap.
  EXPECT_NE(bad("rewrites: - | [0-2] blas block_rows=0 math=libm | [3] loop math=poly unroll=1"), "");
  EXPECT_NE(
      bad("rewrites: fold_scalars | [0] blas block_rows=0 math=libm | [1] loop math=libm unroll=1 | [2] "
          "multi_pass acc=1 math=libm | [3] loop math=poly unroll=1"),
      "");
  EXPECT_NE(
      bad("rewrites: - | [0] loop math=libm unroll=1 | [1] loop math=libm unroll=1 | [2] multi_pass acc=1 "
          "math=libm | [3] loop math=poly unroll=1"),
      "");
  EXPECT_NE(
      bad("rewrites: - | [0] blas math=libm | [1] loop math=libm unroll=1 | [2] multi_pass acc=1 math=libm | "
          "[3] loop math=poly unroll=1"),
      "");
  EXPECT_NE(bad("rewrites: - | [0] blas block_rows=0 math=libm tile=32 | [1] loop math=libm unroll=1 | [2] "
                "multi_pass acc=1 math=libm | [3] loop math=poly unroll=1"),
            "");
  EXPECT_NE(bad("rewrites: - | [0] blas block_rows=0 math=libm | [2] multi_pass acc=1 math=libm | [3] loop "
                "math=poly unroll=1"),
            "");
  // The same with the rewrite it offers is fine: gemv head with a fused epilogue.
  auto good = parse_program("rewrites: gemm_rowsum_to_gemv | [0-1] simd acc=8 math=poly");
  ASSERT_TRUE(good);
  auto st = validate_program(t, *good);
  EXPECT_TRUE(st) << st.message();
}

TEST(ProgramSpace, RewritesMatchWhereTheyShould) {
  auto offered = [](const task_spec& t) {
    std::vector<std::string> out;
    auto b = program_builder::create(t);
    while (b && !b->done() && b->next().slot.rfind("rewrite:", 0) == 0) {
      out.push_back(b->next().slot.substr(8));
      b->choose("yes");
    }
    return out;
  };
  using v = std::vector<std::string>;
  for (const auto& tt : test_tasks()) {
    const auto got = offered(tt.task);
    const std::string& n = tt.task.name;
    if (n == "ew_redundant") EXPECT_EQ(got, v{"drop_redundant"});
    if (n == "softmax_scaled") EXPECT_EQ(got, v{"fold_scalars"});
    if (n == "row_max_monotone") EXPECT_EQ(got, (v{"max_through_monotone"}));
    if (n == "row_mean_affine") EXPECT_EQ(got, (v{"sum_through_affine", "fold_scalars"}));
    if (n == "gemm_rowsum") EXPECT_EQ(got, (v{"sum_through_affine", "gemm_rowsum_to_gemv"}));
    if (n == "gemm_rowmean") EXPECT_EQ(got, (v{"sum_through_affine", "gemm_rowsum_to_gemv"}));
    if (n == "gemm_rowmax") EXPECT_EQ(got, (v{"max_through_monotone"}));
    if (n == "gemm_bias_relu" || n == "gemm_softmax" || n == "layer_norm") EXPECT_EQ(got, v{});
  }
  // mul_scalar with a negative scale is not monotone; leaky_relu with a negative slope neither.
  EXPECT_EQ(
      offered(
          make("neg", {in("x", {3, 5})}, {op("mul_scalar", {}, {{"s", -1.0}}), op("row_max")}, true).task),
      v{});
  EXPECT_EQ(
      offered(
          make("lr", {in("x", {3, 5})}, {op("leaky_relu", {}, {{"alpha", -0.5}}), op("row_max")}, true).task),
      v{});
  // A full-shaped operand between the GEMM and the sum blocks the GEMV rewrite.
  EXPECT_EQ(offered(make("full", {in("x", {3, 5}), in("w", {5, 4}, true), in("z", {3, 4})},
                         {op("matmul", {"w"}), op("add", {"z"}), op("row_sum")}, false)
                        .task),
            v{});
}

TEST(ProgramSpace, CreateRejectsInvalidAndUnsupportedTasks) {
  auto tt = make("bad", {in("x", {3, 5})}, {op("no_such_op")}, true);
  EXPECT_FALSE(program_builder::create(tt.task));
  auto half = make("half", {in("x", {3, 5})}, {op("relu")}, true);
  half.task.inputs[0].dtype = "float16";
  EXPECT_FALSE(program_builder::create(half.task));
  EXPECT_FALSE(program_builder::create(make("ok", {in("x", {3, 5})}, {op("relu")}, true).task, "tpu"));
  EXPECT_TRUE(eager_program(tt.task).groups.empty());
}

}  // namespace
}  // namespace crucible::kernels
