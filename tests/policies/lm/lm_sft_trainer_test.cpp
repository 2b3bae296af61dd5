#include "policies/lm/lm_sft_trainer.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "policies/lm/lm_sampler.hpp"
#include "tests/policies/lm/lm_weights.hpp"
#include "tests/policies/lm/tiny_lms.hpp"

namespace crucible::policies {
namespace {

constexpr int64_t vocab = 53;

std::unique_ptr<decoder_lm> tiny_lm(uint64_t seed) {
  return testing::tiny_lm(lm_family::qwen2, vocab, seed);
}

const std::vector<int64_t> probe = {3, 1, 4, 1, 5, 9, 2, 6};

// Prompts from tokens 1..20, completions from 30..52: what the completions teach says nothing about prompts.
std::vector<lm_example> memory_set() {
  return {{{1, 4, 9, 16, 2}, {30, 41, 35, 52, 44, 31}},
          {{3, 5, 7, 11, 13, 17, 19}, {47, 33, 39}},
          {{2, 20, 18}, {50, 36, 42, 38, 46}},
          {{6, 12, 8, 10}, {32, 34, 49, 40, 45, 51, 43}}};
}

// Mean negative log-likelihood of `tokens` after `context`, from the sampler's independent computation.
double nll(decoder_lm& lm, const std::vector<int64_t>& context, const std::vector<int64_t>& tokens) {
  auto lp = completion_logprobs(lm, context, tokens, 1.0);
  EXPECT_TRUE(lp) << lp.message();
  double s = 0;
  for (float x : *lp) s -= x;
  return s / static_cast<double>(lp->size());
}

// The prompts' tokens after the first, predicted from their own prefixes.
double prompt_loss(decoder_lm& lm, const std::vector<lm_example>& set) {
  double s = 0;
  for (const auto& e : set) s += nll(lm, {e.prompt[0]}, {e.prompt.begin() + 1, e.prompt.end()});
  return s / static_cast<double>(set.size());
}

lm_sft_options fast() {
  lm_sft_options o;
  o.lr = 1e-2;
  o.warmup_steps = 0;
  o.weight_decay = 0;
  return o;
}

TEST(LmSftTrainer, TheLossIsTheWeightedMeanOfCompletionTokensOnly) {
  auto lm = tiny_lm(1);
  lm_sft_trainer t(*lm, {});
  auto set = memory_set();
  set[0].weight = 2.0;
  set[2].weight = 0.5;
  double num = 0, den = 0;
  for (const auto& e : set) {
    const double n = static_cast<double>(e.completion.size());
    num += e.weight * n * nll(*lm, e.prompt, e.completion);
    den += e.weight * n;
  }
  auto loss = t.evaluate(set);
  ASSERT_TRUE(loss) << loss.message();
  EXPECT_NEAR(*loss, num / den, 1e-5);
  EXPECT_GT(*loss, 3.0) << "a random model is near log(53) = 3.97";
}

// The loss mask: training lowers the completions' loss, not the prompts' (the same sequences with the prompt
// trained as completion show that the prompts' loss can fall).
TEST(LmSftTrainer, MemorisesCompletionsAndLeavesPromptTokensUntrained) {
  const auto set = memory_set();
  std::vector<lm_example> whole;
  for (const auto& e : set) {
    lm_example w{{e.prompt[0]}, {e.prompt.begin() + 1, e.prompt.end()}};
    w.completion.insert(w.completion.end(), e.completion.begin(), e.completion.end());
    whole.push_back(w);
  }
  auto lm = tiny_lm(2), control = tiny_lm(2);
  lm_sft_trainer t(*lm, fast()), tc(*control, fast());
  const double completion_before = *t.evaluate(set), prompt_before = prompt_loss(*lm, set);
  for (int i = 0; i < 60; ++i) {
    auto st = t.step(set);
    ASSERT_TRUE(st) << st.message();
    ASSERT_TRUE(tc.step(whole));
  }
  const double completion_after = *t.evaluate(set), prompt_after = prompt_loss(*lm, set);
  EXPECT_LT(completion_after, 0.3 * completion_before) << completion_before << " -> " << completion_after;
  EXPECT_GT(prompt_after, prompt_before - 0.05) << prompt_before << " -> " << prompt_after;
  EXPECT_LT(prompt_loss(*control, set), 0.6 * prompt_before)
      << "trained as completion, the prompts are learnt";
  EXPECT_EQ(t.steps(), 60);
}

TEST(LmSftTrainer, AnExampleOfWeightZeroContributesNothing) {
  auto a = tiny_lm(3), b = tiny_lm(3), c = tiny_lm(3);
  auto set = memory_set();
  auto with_zero = set;
  with_zero.push_back({{7, 7, 7}, {40, 41, 42, 43}, 0.0});
  // Weight 2 counts as the example twice.
  auto doubled = set;
  doubled[1].weight = 2.0;
  auto repeated = set;
  repeated.push_back(set[1]);
  lm_sft_trainer ta(*a, fast()), tb(*b, fast()), tc(*c, fast());
  auto sa = ta.step(set), sb = tb.step(with_zero);
  ASSERT_TRUE(sa && sb);
  EXPECT_EQ(sa->tokens, sb->tokens);
  EXPECT_EQ(sb->examples, 5);
  EXPECT_NEAR(sa->loss, sb->loss, 1e-6);
  EXPECT_NEAR(sa->grad_norm, sb->grad_norm, 1e-6);
  EXPECT_LT(testing::max_logit_diff(*a, *b, probe), 1e-6);

  testing::copy_weights(*a, *b);
  lm_sft_trainer td(*a, fast()), te(*b, fast());
  auto sd = td.step(doubled), se = te.step(repeated);
  ASSERT_TRUE(sd && se);
  EXPECT_NEAR(sd->loss, se->loss, 1e-6);
  EXPECT_NEAR(sd->grad_norm, se->grad_norm, 1e-6);

  // Nothing but zeros: no update, no step.
  for (auto& e : set) e.weight = 0;
  auto before = c->logits(probe);
  auto sz = tc.step(set);
  ASSERT_TRUE(sz);
  EXPECT_EQ(sz->tokens, 0);
  EXPECT_EQ(tc.steps(), 0);
  EXPECT_EQ(*c->logits(probe), *before);
}

TEST(LmSftTrainer, TheLearningRateWarmsUpLinearlyThenFollowsACosineToATenth) {
  lm_sft_options o;
  o.lr = 1.0;
  o.warmup_steps = 10;
  o.total_steps = 110;
  EXPECT_NEAR(lm_sft_learning_rate(o, 1), 0.1, 1e-12);
  EXPECT_NEAR(lm_sft_learning_rate(o, 5), 0.5, 1e-12);
  EXPECT_NEAR(lm_sft_learning_rate(o, 10), 1.0, 1e-12);
  EXPECT_NEAR(lm_sft_learning_rate(o, 60), 0.55, 1e-12);  // half way down the cosine
  EXPECT_NEAR(lm_sft_learning_rate(o, 110), 0.1, 1e-12);
  EXPECT_NEAR(lm_sft_learning_rate(o, 500), 0.1, 1e-12);
  for (int64_t k = 11; k <= 110; ++k) EXPECT_LT(lm_sft_learning_rate(o, k), lm_sft_learning_rate(o, k - 1));
  o.total_steps = 0;
  EXPECT_NEAR(lm_sft_learning_rate(o, 5), 0.5, 1e-12);
  EXPECT_NEAR(lm_sft_learning_rate(o, 1000), 1.0, 1e-12);
  o.warmup_steps = 0;
  EXPECT_NEAR(lm_sft_learning_rate(o, 1), 1.0, 1e-12);

  // The trainer steps along it.
  auto lm = tiny_lm(4);
  lm_sft_options s;
  s.lr = 1e-3;
  s.warmup_steps = 2;
  s.total_steps = 4;
  lm_sft_trainer t(*lm, s);
  for (int64_t k = 1; k <= 5; ++k) {
    auto st = t.step(memory_set());
    ASSERT_TRUE(st);
    EXPECT_NEAR(st->lr, lm_sft_learning_rate(s, k), 1e-15) << k;
  }
  EXPECT_NEAR(lm_sft_learning_rate(s, 1), 5e-4, 1e-15);
  EXPECT_NEAR(lm_sft_learning_rate(s, 4), 1e-4, 1e-15);
}

TEST(LmSftTrainer, MicroBatchesAndActivationCheckpointingChangeNothing) {
  auto a = tiny_lm(5), b = tiny_lm(5), c = tiny_lm(5);
  auto o1 = fast(), o8 = fast(), oc = fast();
  o1.micro_batch = 1;
  o8.micro_batch = 8;
  oc.micro_batch = 3;
  oc.checkpoint_activations = true;
  oc.logit_elements = vocab * 2;  // two positions per log-softmax chunk
  lm_sft_trainer t1(*a, o1), t8(*b, o8), tc(*c, oc);
  for (int i = 0; i < 3; ++i) {
    auto s1 = t1.step(memory_set()), s8 = t8.step(memory_set()), sc = tc.step(memory_set());
    ASSERT_TRUE(s1 && s8 && sc);
    EXPECT_NEAR(s1->loss, s8->loss, 1e-6);
    EXPECT_NEAR(s1->loss, sc->loss, 1e-6);
    EXPECT_NEAR(s1->grad_norm, s8->grad_norm, 1e-5 * s1->grad_norm);
    EXPECT_NEAR(s1->grad_norm, sc->grad_norm, 1e-5 * s1->grad_norm);
  }
  EXPECT_LT(testing::max_logit_diff(*a, *b, probe), 1e-5);
  EXPECT_LT(testing::max_logit_diff(*a, *c, probe), 1e-5);
  EXPECT_GT(testing::max_logit_diff(*a, *tiny_lm(5), probe), 1e-3) << "it trained";
}

TEST(LmSftTrainer, SaveStateAndLoadStateResumeTheSameTraining) {
  lm_sft_options o;
  o.lr = 1e-2;
  o.warmup_steps = 5;  // the schedule's position is part of the state
  auto a = tiny_lm(6);
  lm_sft_trainer ta(*a, o);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ta.step(memory_set()));
  const auto state = ta.save_state();
  auto b = tiny_lm(6), c = tiny_lm(6);
  testing::copy_weights(*a, *b);
  testing::copy_weights(*a, *c);
  lm_sft_trainer tb(*b, o), tc(*c, o);
  auto st = tb.load_state(state);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(tb.steps(), 3);
  auto sa = ta.step(memory_set()), sb = tb.step(memory_set()), sc = tc.step(memory_set());
  ASSERT_TRUE(sa && sb && sc);
  EXPECT_EQ(sa->lr, sb->lr);
  EXPECT_NE(sa->lr, sc->lr);
  EXPECT_LT(testing::max_logit_diff(*a, *b, probe), 1e-6);
  EXPECT_GT(testing::max_logit_diff(*a, *c, probe), 1e-4) << "without the state the step differs";

  auto e = tb.load_state({'x'});
  ASSERT_FALSE(e);
  EXPECT_NE(e.message().find("not a trainer checkpoint"), std::string::npos) << e.message();
  auto other = testing::tiny_lm(lm_family::llama, 61, 3);
  lm_sft_trainer to(*other, o);
  ASSERT_TRUE(to.step(std::vector<lm_example>{lm_example{{1}, {2, 3}}}));
  auto e2 = tb.load_state(to.save_state());
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.message().find("does not fit"), std::string::npos) << e2.message();
  EXPECT_EQ(tb.steps(), 4);
}

// A thread whose autograd is off (an embedded Python's KernelBench module turns it off for its thread, and
// the sft stage trains on the thread that loaded the tasks) still trains, and keeps its mode afterwards.
TEST(LmSftTrainer, AStepTrainsOnAThreadWhoseAutogradIsOff) {
  auto lm = tiny_lm(5);
  lm_sft_trainer t(*lm, fast());
  auto before = lm->logits(probe);
  at::AutoGradMode off(false);
  auto st = t.step(memory_set());
  ASSERT_TRUE(st) << st.message();
  EXPECT_NE(*lm->logits(probe), *before) << "the step changed no weight";
  EXPECT_FALSE(at::GradMode::is_enabled());
}

TEST(LmSftTrainer, BadExamplesAreErrorsAndChangeNothing) {
  auto lm = tiny_lm(7);
  lm_sft_trainer t(*lm, fast());
  auto before = lm->logits(probe);
  auto expect_error = [&](std::vector<lm_example> batch, const std::string& words) {
    auto st = t.step(batch);
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
    EXPECT_FALSE(t.evaluate(batch));
  };
  auto set = memory_set();
  set[1].completion[0] = vocab;
  expect_error(set, "example 1: token 53 is outside the vocabulary");
  set = memory_set();
  set[2].completion.clear();
  expect_error(set, "example 2 has an empty completion");
  set = memory_set();
  set[0].prompt.clear();
  expect_error(set, "example 0 has an empty prompt");
  set = memory_set();
  set[3].weight = -1;
  expect_error(set, "example 3 has weight");
  EXPECT_EQ(*lm->logits(probe), *before);
  EXPECT_EQ(t.steps(), 0);
}

}  // namespace
}  // namespace crucible::policies
