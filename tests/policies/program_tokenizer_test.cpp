#include "policies/program_tokenizer.hpp"

#include <random>
#include <set>

#include <gtest/gtest.h>

#include "kernels/program/program_space.hpp"
#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

using testing::all_tasks;
using testing::make_prompt;

exemplar make_exemplar(const kernels::program& p, int32_t bucket) {
  exemplar e;
  e.candidate_id = "c" + std::to_string(bucket);
  e.program = kernels::to_text(p);
  e.bucket = bucket;
  e.speedup = 1.0 + bucket;
  return e;
}

TEST(ProgramTokenizer, VocabularyCoversTheProgramSpace) {
  program_tokenizer tok("cpu");
  const auto& vocab = kernels::vocabulary("cpu");
  std::set<int32_t> ids;
  for (const auto& s : vocab.slots) {
    int32_t i = tok.slot_id(s);
    ASSERT_GE(i, 0) << s;
    EXPECT_FALSE(tok.is_choice(i));
    ids.insert(i);
  }
  for (const auto& c : vocab.choices) {
    int32_t i = tok.id(c);
    ASSERT_GE(i, 0) << c;
    EXPECT_TRUE(tok.is_choice(i)) << c;
    EXPECT_EQ(tok.token(i), c);
    ids.insert(i);
  }
  EXPECT_EQ(ids.size(), vocab.slots.size() + vocab.choices.size());
  EXPECT_EQ(tok.token(program_tokenizer::pad_id), "<pad>");
  EXPECT_EQ(tok.token(program_tokenizer::program_id), "<program>");
  EXPECT_EQ(tok.token(tok.bucket_token(3)), "bucket:3");
  EXPECT_EQ(tok.bucket_token(99), tok.bucket_token(program_tokenizer::n_buckets - 1));
  EXPECT_EQ(tok.id("no-such-token"), -1);
  EXPECT_EQ(tok.fingerprint(), program_tokenizer("cpu").fingerprint());
  std::cout << "[ policy   ] vocabulary: " << tok.size() << " tokens (" << vocab.slots.size() << " slots, "
            << vocab.choices.size() << " choices)\n";
}

TEST(ProgramTokenizer, TaskTokensDescribeOpsAndShapes) {
  program_tokenizer tok;
  auto toks = tok.encode_task(testing::gemm_row_sum_task());
  const std::string text = tok.to_string(toks);
  for (const char* want : {"dtype:float32", "op:matmul", "class:gemm", "side:matrix", "op:add", "side:row",
                           "op:mul_scalar", "attr:s", "val:small", "op:row_sum", "rows:4", "cols:5"})
    EXPECT_NE(text.find(want), std::string::npos) << want << " missing from: " << text;
  for (int32_t t : toks) EXPECT_NE(t, program_tokenizer::unk_id) << text;
  // An unknown op still encodes (as <unk>), and never throws.
  auto bad = testing::softmax_task();
  bad.ops.push_back(testing::op("no_such_op"));
  auto bad_toks = tok.encode_task(bad);
  EXPECT_NE(std::find(bad_toks.begin(), bad_toks.end(), program_tokenizer::unk_id), bad_toks.end());
}

TEST(ProgramTokenizer, ProgramsRoundTripThroughTokens) {
  program_tokenizer tok;
  std::mt19937_64 rng(7);
  for (const auto& t : all_tasks()) {
    std::vector<kernels::program> progs = {kernels::eager_program(t)};
    for (int i = 0; i < 20; ++i) progs.push_back(kernels::random_program(t, rng));
    for (const auto& p : progs) {
      auto toks = tok.encode_program(t, p);
      ASSERT_TRUE(toks) << t.name << ": " << toks.message();
      ASSERT_EQ(toks->size() % 2, 0u);
      auto decisions = kernels::decisions_of(t, p);
      ASSERT_TRUE(decisions);
      ASSERT_EQ(toks->size(), 2 * decisions->size());
      for (size_t i = 0; i < toks->size(); i += 2) {
        EXPECT_FALSE(tok.is_choice((*toks)[i]));
        EXPECT_TRUE(tok.is_choice((*toks)[i + 1]));
      }
      auto rep = tok.replay(t, *toks);
      ASSERT_TRUE(rep) << rep.message();
      EXPECT_EQ(rep->prog, p) << kernels::to_text(p);
      ASSERT_EQ(rep->decisions.size(), decisions->size());
      for (size_t k = 0; k < decisions->size(); ++k) {
        const auto& d = rep->decisions[k];
        EXPECT_EQ(d.choice_index, static_cast<int32_t>(2 * k + 1));
        EXPECT_EQ(d.legal.size(), (*decisions)[k].first.options.size());
        EXPECT_EQ(d.legal[d.chosen], (*toks)[2 * k + 1]);
      }
    }
  }
}

TEST(ProgramTokenizer, ReplayNamesTheBadToken) {
  program_tokenizer tok;
  auto t = testing::gemm_row_sum_task();
  auto toks = *tok.encode_program(t, kernels::eager_program(t));
  auto swapped = toks;
  std::swap(swapped[0], swapped[1]);
  auto r1 = tok.replay(t, swapped);
  ASSERT_FALSE(r1);
  EXPECT_NE(r1.message().find("expected the slot"), std::string::npos) << r1.message();
  auto illegal = toks;
  illegal[1] = tok.id("knob:unroll=4");
  auto r2 = tok.replay(t, illegal);
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.message().find("not a legal option"), std::string::npos) << r2.message();
  auto shorter = toks;
  shorter.resize(toks.size() - 2);
  EXPECT_FALSE(tok.replay(t, shorter));
  auto longer = toks;
  longer.push_back(toks[0]);
  EXPECT_FALSE(tok.replay(t, longer));
}

TEST(ProgramTokenizer, PromptHasTaskExemplarsAndProgramMarker) {
  program_tokenizer tok;
  auto t = testing::gemm_row_sum_task();
  std::mt19937_64 rng(3);
  auto e1 = make_exemplar(kernels::random_program(t, rng), 2);
  auto e2 = make_exemplar(kernels::eager_program(t), 5);
  exemplar garbage;
  garbage.program = "this is not a program";
  exemplar foreign = make_exemplar(kernels::eager_program(testing::softmax_task()), 7);
  auto p = make_prompt(t, {e1, garbage, foreign, e2});
  auto ids = tok.encode_prompt(p, 1000);
  ASSERT_TRUE(ids) << ids.message();
  EXPECT_EQ(ids->at(0), program_tokenizer::bos_id);
  EXPECT_EQ(ids->at(1), program_tokenizer::task_id);
  EXPECT_EQ(ids->back(), program_tokenizer::program_id);
  auto task_toks = tok.encode_task(t);
  auto ex1 = tok.encode_exemplar(t, e1);
  auto ex2 = tok.encode_exemplar(t, e2);
  EXPECT_TRUE(tok.encode_exemplar(t, garbage).empty());
  EXPECT_TRUE(tok.encode_exemplar(t, foreign).empty());
  ASSERT_EQ(ex1[0], program_tokenizer::exemplar_id);
  EXPECT_EQ(ex1[1], tok.bucket_token(2));
  EXPECT_EQ(ex2[1], tok.bucket_token(5));
  std::vector<int32_t> want = {program_tokenizer::bos_id, program_tokenizer::task_id};
  want.insert(want.end(), task_toks.begin(), task_toks.end());
  want.insert(want.end(), ex1.begin(), ex1.end());
  want.insert(want.end(), ex2.begin(), ex2.end());
  want.push_back(program_tokenizer::program_id);
  EXPECT_EQ(*ids, want) << tok.to_string(*ids);
}

TEST(ProgramTokenizer, TruncationDropsExemplarsBeforeTheTask) {
  program_tokenizer tok;
  auto t = testing::gemm_row_sum_task();
  auto e1 = make_exemplar(kernels::eager_program(t), 1);
  std::mt19937_64 rng(5);
  auto e2 = make_exemplar(kernels::random_program(t, rng), 6);
  auto p = make_prompt(t, {e1, e2});
  const size_t task_len = tok.encode_task(t).size();
  const size_t ex1_len = tok.encode_exemplar(t, e1).size();
  const size_t full = 3 + task_len + ex1_len + tok.encode_exemplar(t, e2).size();
  auto all = *tok.encode_prompt(p, static_cast<int32_t>(full));
  EXPECT_EQ(all.size(), full);
  // One token short: the second exemplar loses its last decision (two tokens), the first is whole.
  auto cut = *tok.encode_prompt(p, static_cast<int32_t>(full - 1));
  EXPECT_EQ(cut.size(), full - 2);
  EXPECT_TRUE(std::equal(cut.begin(), cut.end() - 1, all.begin()));
  // Room for the task and the first exemplar only.
  auto one = *tok.encode_prompt(p, static_cast<int32_t>(3 + task_len + ex1_len + 2));
  EXPECT_EQ(one.size(), 3 + task_len + ex1_len);
  EXPECT_EQ(std::count(one.begin(), one.end(), program_tokenizer::exemplar_id), 1);
  // Room for the task only: no exemplar at all, task whole.
  auto none = *tok.encode_prompt(p, static_cast<int32_t>(3 + task_len + 3));
  EXPECT_EQ(none.size(), 3 + task_len);
  EXPECT_EQ(std::count(none.begin(), none.end(), program_tokenizer::exemplar_id), 0);
  // Less than the task: the task description is cut, the markers stay.
  auto tiny = *tok.encode_prompt(p, 8);
  ASSERT_EQ(tiny.size(), 8u);
  EXPECT_EQ(tiny[0], program_tokenizer::bos_id);
  EXPECT_EQ(tiny[1], program_tokenizer::task_id);
  EXPECT_EQ(tiny.back(), program_tokenizer::program_id);
  EXPECT_FALSE(tok.encode_prompt(p, 2));
}

}  // namespace
}  // namespace crucible::policies
