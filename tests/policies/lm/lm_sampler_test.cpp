#include "policies/lm/lm_sampler.hpp"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "tests/policies/lm/tiny_lms.hpp"

namespace crucible::policies {
namespace {

std::unique_ptr<decoder_lm> tiny_lm() {
  return testing::tiny_lm(lm_family::qwen2, 61, 2);
}

const std::vector<int64_t> prompt = {3, 14, 15, 9, 26};

TEST(LmSampler, CompletionsAreReproducibleInTheSeedAndTheirLogProbsReplay) {
  auto lm = tiny_lm();
  sampling_options o;
  o.n = 6;
  o.max_new_tokens = 12;
  o.seed = 7;
  auto a = sample_completions(*lm, prompt, o);
  auto b = sample_completions(*lm, prompt, o);
  ASSERT_TRUE(a && b) << (a ? b.message() : a.message());
  ASSERT_EQ(a->size(), 6u);
  std::set<std::vector<int64_t>> distinct;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].tokens, (*b)[i].tokens);
    EXPECT_EQ((*a)[i].tokens.size(), 12u);
    EXPECT_EQ((*a)[i].finish, finish_reason::length);
    distinct.insert((*a)[i].tokens);
    // The stored log-probs are what a fresh scoring pass gives (batched decode = one full pass).
    auto replay = completion_logprobs(*lm, prompt, (*a)[i].tokens, o.temperature);
    ASSERT_TRUE(replay) << replay.message();
    ASSERT_EQ(replay->size(), (*a)[i].logprobs.size());
    for (size_t t = 0; t < replay->size(); ++t) EXPECT_NEAR((*replay)[t], (*a)[i].logprobs[t], 1e-4);
  }
  EXPECT_GT(distinct.size(), 1u) << "six samples at temperature 1 are not all one";
  o.seed = 8;
  auto c = sample_completions(*lm, prompt, o);
  ASSERT_TRUE(c);
  bool differs = false;
  for (size_t i = 0; i < c->size(); ++i) differs |= (*c)[i].tokens != (*a)[i].tokens;
  EXPECT_TRUE(differs) << "another seed, other samples";
}

TEST(LmSampler, GreedyTopKAndTopPNarrowTheDraw) {
  auto lm = tiny_lm();
  sampling_options greedy;
  greedy.n = 3;
  greedy.temperature = 0;
  greedy.max_new_tokens = 8;
  auto g = sample_completions(*lm, prompt, greedy);
  ASSERT_TRUE(g);
  EXPECT_EQ((*g)[0].tokens, (*g)[1].tokens);
  EXPECT_EQ((*g)[1].tokens, (*g)[2].tokens);
  // The greedy token is the argmax of the logits after the prompt.
  auto logits = lm->logits(prompt);
  ASSERT_TRUE(logits);
  const float* last = logits->data() + (prompt.size() - 1) * 61;
  EXPECT_EQ((*g)[0].tokens[0], std::max_element(last, last + 61) - last);

  sampling_options top1;
  top1.n = 4;
  top1.top_k = 1;
  top1.max_new_tokens = 8;
  auto k1 = sample_completions(*lm, prompt, top1);
  ASSERT_TRUE(k1);
  for (const auto& c : *k1) EXPECT_EQ(c.tokens, (*g)[0].tokens) << "top_k 1 is greedy";
  sampling_options nucleus;
  nucleus.n = 4;
  nucleus.top_p = 1e-6;
  nucleus.max_new_tokens = 8;
  auto p = sample_completions(*lm, prompt, nucleus);
  ASSERT_TRUE(p);
  for (const auto& c : *p) EXPECT_EQ(c.tokens, (*g)[0].tokens) << "a tiny nucleus holds the top token alone";
  for (const auto& c : *p)
    for (auto lp : c.logprobs)
      EXPECT_LT(lp, 0.0f) << "log-probs are of the whole distribution, not the nucleus";
}

TEST(LmSampler, StopTokensAndSequencesEndACompletionThatKeepsThem) {
  auto lm = tiny_lm();
  sampling_options greedy;
  greedy.temperature = 0;
  greedy.max_new_tokens = 10;
  auto g = sample_completions(*lm, prompt, greedy);
  ASSERT_TRUE(g);
  const auto& free_run = (*g)[0].tokens;
  sampling_options stop = greedy;
  stop.stop_tokens = {free_run[3]};
  auto s = sample_completions(*lm, prompt, stop);
  ASSERT_TRUE(s);
  const auto first = std::find(free_run.begin(), free_run.end(), free_run[3]) - free_run.begin();
  EXPECT_EQ((*s)[0].tokens, std::vector<int64_t>(free_run.begin(), free_run.begin() + first + 1));
  EXPECT_EQ((*s)[0].finish, finish_reason::stop);
  sampling_options seq = greedy;
  seq.stop_sequences = {{free_run[4], free_run[5]}};
  auto q = sample_completions(*lm, prompt, seq);
  ASSERT_TRUE(q);
  EXPECT_EQ((*q)[0].finish, finish_reason::stop);
  EXPECT_LE((*q)[0].tokens.size(), 6u);
  EXPECT_EQ((*q)[0].tokens.back(), free_run[5]);
}

TEST(LmSampler, BadRequestsAreErrors) {
  auto lm = tiny_lm();
  sampling_options o;
  EXPECT_FALSE(sample_completions(*lm, {}, o));
  EXPECT_FALSE(sample_completions(*lm, {61}, o));
  o.top_p = 0;
  EXPECT_FALSE(sample_completions(*lm, prompt, o));
  o.top_p = 1;
  o.n = 0;
  EXPECT_FALSE(sample_completions(*lm, prompt, o));
  EXPECT_FALSE(completion_logprobs(*lm, prompt, {99}, 1.0));
}

}  // namespace
}  // namespace crucible::policies
