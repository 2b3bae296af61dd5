#include "policies/lm/lm_grpo_trainer.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "policies/lm/lm_sampler.hpp"
#include "tests/policies/lm/lm_weights.hpp"
#include "tests/policies/lm/tiny_lms.hpp"

namespace crucible::policies {
namespace {

std::unique_ptr<decoder_lm> tiny_lm(uint64_t seed) {
  return testing::tiny_lm(lm_family::llama, 53, seed);
}

const std::vector<int64_t> prompt = {5, 8, 13, 21};

lm_group sampled_group(decoder_lm& lm, const std::vector<double>& rewards, uint64_t seed,
                       const std::vector<int64_t>& context = prompt) {
  sampling_options o;
  o.n = static_cast<int>(rewards.size());
  o.max_new_tokens = 6;
  o.seed = seed;
  auto out = sample_completions(lm, context, o);
  EXPECT_TRUE(out) << out.message();
  lm_group g;
  for (size_t i = 0; i < out->size(); ++i)
    g.members.push_back({context, (*out)[i].tokens, (*out)[i].logprobs, rewards[i]});
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

// Groups of unequal prompt and completion lengths, so that micro-batches pad.
std::vector<lm_group> ragged_groups(decoder_lm& lm) {
  auto a = sampled_group(lm, {1, 0, 0.5, 0.2, 0.9}, 21);
  auto b = sampled_group(lm, {0, 1, 1}, 22, {3, 1, 4, 1, 5, 9, 2, 6, 5});
  b.members[1].completion.resize(2);
  b.members[1].logprobs.resize(2);
  b.members[2].completion.resize(4);
  b.members[2].logprobs.resize(4);
  return {a, b};
}

// Three steps of each trainer on the same groups: the losses and gradient norms of each step, and the models
// at the end. Adam's first step is about lr * sign(gradient), so the gradient norms carry the magnitudes.
struct run_result {
  std::vector<double> loss, grad_norm;
};
run_result train_three_steps(decoder_lm& lm, const lm_train_options& o, const std::vector<lm_group>& groups) {
  lm_grpo_trainer t(lm, o);
  run_result r;
  for (int i = 0; i < 3; ++i) {
    auto st = t.step(groups);
    EXPECT_TRUE(st) << st.message();
    if (!st) break;
    r.loss.push_back(st->loss);
    r.grad_norm.push_back(st->grad_norm);
  }
  return r;
}

void expect_same_run(const run_result& a, const run_result& b) {
  ASSERT_EQ(a.loss.size(), 3u);
  ASSERT_EQ(b.loss.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(a.loss[i], b.loss[i], 1e-6) << "step " << i;
    EXPECT_NEAR(a.grad_norm[i], b.grad_norm[i], 1e-5 * a.grad_norm[i]) << "step " << i;
  }
}

// Padding after a sequence changes nothing before it under causal attention, and gradients accumulate across
// micro-batches: one sequence per forward and eight per forward make the same update.
TEST(LmGrpoTrainer, MicroBatchesChangeNothing) {
  auto a = tiny_lm(15), b = tiny_lm(15);
  const auto groups = ragged_groups(*a);
  for (const char* variant : {"grpo", "dr_grpo", "dapo"}) {
    testing::copy_weights(*a, *b);
    lm_train_options one, eight;
    one.grpo.variant = eight.grpo.variant = variant;
    one.grpo.lr = eight.grpo.lr = 3e-3;
    one.micro_batch = 1;
    eight.micro_batch = 8;
    auto r1 = train_three_steps(*a, one, groups);
    auto r8 = train_three_steps(*b, eight, groups);
    expect_same_run(r1, r8);
    EXPECT_LT(testing::max_logit_diff(*a, *b, {3, 1, 4, 1, 5, 9, 2, 6}), 1e-5) << variant;
    EXPECT_GT(testing::max_logit_diff(*a, *tiny_lm(15), {3, 1, 4, 1, 5, 9, 2, 6}), 1e-3) << "it trained";
  }
}

TEST(LmGrpoTrainer, ActivationCheckpointingGivesTheSameUpdate) {
  auto a = tiny_lm(16), b = tiny_lm(16);
  const auto groups = ragged_groups(*a);
  lm_train_options plain, checkpointed;
  plain.grpo.lr = checkpointed.grpo.lr = 3e-3;
  checkpointed.checkpoint_activations = true;
  checkpointed.micro_batch = plain.micro_batch = 3;
  expect_same_run(train_three_steps(*a, plain, groups), train_three_steps(*b, checkpointed, groups));
  EXPECT_LT(testing::max_logit_diff(*a, *b, prompt), 1e-5);
}

// bf16 autocast is for CUDA; on the CPU the option changes nothing.
TEST(LmGrpoTrainer, Bf16IsIgnoredOnTheCpu) {
  auto a = tiny_lm(17), b = tiny_lm(17);
  const auto groups = ragged_groups(*a);
  lm_train_options plain, bf16;
  bf16.bf16 = true;
  expect_same_run(train_three_steps(*a, plain, groups), train_three_steps(*b, bf16, groups));
  EXPECT_EQ(testing::max_logit_diff(*a, *b, prompt), 0.0);
}

// A learner resumes: the state carries AdamW's moments and the frozen reference, so a trainer restored from
// it takes the same next step as the one that wrote it; a fresh trainer over the same weights does not.
TEST(LmGrpoTrainer, SaveStateAndLoadStateResumeTheSameTraining) {
  auto a = tiny_lm(18);
  const auto groups = ragged_groups(*a);
  const auto later = sampled_group(*a, {0.3, 1, 0, 0.6}, 31);
  lm_train_options o;
  o.grpo.lr = 3e-3;
  o.grpo.kl_coef = 0.5;  // the reference's part of the loss is large
  lm_grpo_trainer ta(*a, o);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(ta.step(groups));
  const auto state = ta.save_state();
  EXPECT_EQ(ta.steps(), 2);

  auto b = tiny_lm(40), c = tiny_lm(41);  // other weights, so other references until the state is loaded
  testing::copy_weights(*a, *b);
  testing::copy_weights(*a, *c);
  lm_grpo_trainer tb(*b, o), tc(*c, o);
  auto st = tb.load_state(state);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(tb.steps(), 2);

  auto sa = ta.step({later}), sb = tb.step({later}), sc = tc.step({later});
  ASSERT_TRUE(sa && sb && sc);
  EXPECT_NEAR(sa->loss, sb->loss, 1e-7);
  EXPECT_NEAR(sa->kl, sb->kl, 1e-7);
  EXPECT_LT(testing::max_logit_diff(*a, *b, prompt), 1e-6);
  EXPECT_GT(std::fabs(sa->kl - sc->kl), 1e-4) << "without the state the reference differs";
  EXPECT_GT(testing::max_logit_diff(*a, *c, prompt), 1e-4) << "without the state the moments differ";
}

TEST(LmGrpoTrainer, LoadStateRefusesForeignBytesAndOtherModels) {
  auto a = tiny_lm(19);
  lm_grpo_trainer ta(*a, {});
  auto before = a->logits(prompt);
  auto e = ta.load_state(std::vector<char>{'n', 'o', 't'});
  ASSERT_FALSE(e);
  EXPECT_NE(e.message().find("not a trainer checkpoint"), std::string::npos) << e.message();

  auto other = testing::tiny_lm(lm_family::qwen2, 61, 3);
  lm_grpo_trainer to(*other, {});
  auto e2 = ta.load_state(to.save_state());
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.message().find("reference"), std::string::npos) << e2.message();
  EXPECT_EQ(*a->logits(prompt), *before);
  EXPECT_EQ(ta.steps(), 0);
}

}  // namespace
}  // namespace crucible::policies
