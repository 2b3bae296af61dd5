#include "policies/lm/lm_grpo_trainer.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "policies/lm/lm_sampler.hpp"
#include "tests/policies/lm/tiny_lms.hpp"

namespace crucible::policies {
namespace {

std::unique_ptr<decoder_lm> tiny_lm(uint64_t seed) {
  return testing::tiny_lm(lm_family::llama, 53, seed);
}

const std::vector<int64_t> prompt = {5, 8, 13, 21};

lm_group sampled_group(decoder_lm& lm, const std::vector<double>& rewards, uint64_t seed) {
  sampling_options o;
  o.n = static_cast<int>(rewards.size());
  o.max_new_tokens = 6;
  o.seed = seed;
  auto out = sample_completions(lm, prompt, o);
  EXPECT_TRUE(out) << out.message();
  lm_group g;
  for (size_t i = 0; i < out->size(); ++i)
    g.members.push_back({prompt, (*out)[i].tokens, (*out)[i].logprobs, rewards[i]});
  return g;
}

double mean_logprob(decoder_lm& lm, const lm_sample& s) {
  auto lp = completion_logprobs(lm, s.prompt, s.completion, 1.0);
  EXPECT_TRUE(lp);
  double sum = 0;
  for (float x : *lp) sum += x;
  return sum / static_cast<double>(lp->size());
}

TEST(LmGrpoTrainer, AStepRaisesTheLogProbsOfRewardedCompletionsAndLowersTheOthers) {
  for (const char* variant : {"grpo", "dr_grpo", "dapo"}) {
    auto lm = tiny_lm(11);
    auto g = sampled_group(*lm, {1, 0, 0, 1}, 4);
    ASSERT_NE(g.members[0].completion, g.members[1].completion);
    std::vector<double> before;
    for (const auto& s : g.members) before.push_back(mean_logprob(*lm, s));
    lm_train_options o;
    o.grpo.variant = variant;
    o.grpo.lr = 3e-3;
    lm_grpo_trainer trainer(*lm, o);
    for (int step = 0; step < 3; ++step) {
      auto st = trainer.step({g});
      ASSERT_TRUE(st) << st.message();
      EXPECT_EQ(st->tokens, 24);
      EXPECT_EQ(st->samples, 4);
      EXPECT_GT(st->grad_norm, 0.0);
    }
    for (size_t i = 0; i < g.members.size(); ++i) {
      const double after = mean_logprob(*lm, g.members[i]);
      if (g.members[i].reward > 0)
        EXPECT_GT(after, before[i] + 0.01) << variant << " member " << i;
      else
        EXPECT_LT(after, before[i] - 0.01) << variant << " member " << i;
    }
  }
}

// Chunking the vocabulary-wide log-softmax over positions changes memory, not the update.
TEST(LmGrpoTrainer, ChunkedLogSoftmaxGivesTheSameUpdate) {
  auto a = tiny_lm(12), b = tiny_lm(12);
  auto g = sampled_group(*a, {0.2, 1.0, 0.0, 0.5}, 9);
  lm_train_options whole, chunked;
  chunked.logit_elements = 53 * 2;  // two positions per chunk
  lm_grpo_trainer ta(*a, whole), tb(*b, chunked);
  auto sa = ta.step({g});
  auto sb = tb.step({g});
  ASSERT_TRUE(sa && sb);
  EXPECT_NEAR(sa->loss, sb->loss, 1e-6);
  auto la = a->logits(prompt), lb = b->logits(prompt);
  ASSERT_TRUE(la && lb);
  double diff = 0;
  for (size_t i = 0; i < la->size(); ++i)
    diff = std::max(diff, static_cast<double>(std::fabs((*la)[i] - (*lb)[i])));
  EXPECT_LT(diff, 1e-5);
  auto l0 = tiny_lm(12)->logits(prompt);
  double moved = 0;
  for (size_t i = 0; i < la->size(); ++i)
    moved = std::max(moved, static_cast<double>(std::fabs((*la)[i] - (*l0)[i])));
  EXPECT_GT(moved, 1e-4) << "the step changed the model";
}

TEST(LmGrpoTrainer, DapoSkipsGroupsWithoutSignalAndBadSamplesAreErrors) {
  auto lm = tiny_lm(13);
  auto flat = sampled_group(*lm, {1, 1, 1}, 2);
  lm_train_options o;
  o.grpo.variant = "dapo";
  lm_grpo_trainer trainer(*lm, o);
  auto before = lm->logits(prompt);
  auto st = trainer.step({flat});
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(st->skipped_groups, 1);
  EXPECT_EQ(st->tokens, 0);
  EXPECT_EQ(*lm->logits(prompt), *before) << "nothing to learn, nothing changed";

  auto bad = sampled_group(*lm, {1, 0}, 3);
  bad.members[0].logprobs.pop_back();
  auto e = trainer.step({bad});
  ASSERT_FALSE(e);
  EXPECT_NE(e.message().find("log-probs for"), std::string::npos) << e.message();
  auto oov = sampled_group(*lm, {1, 0}, 3);
  oov.members[1].completion[0] = 53;
  auto e2 = trainer.step({oov});
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.message().find("outside the vocabulary"), std::string::npos);
  lm_train_options unknown;
  unknown.grpo.variant = "ppo";
  lm_grpo_trainer t2(*lm, unknown);
  EXPECT_FALSE(t2.step({oov}));
}

}  // namespace
}  // namespace crucible::policies
