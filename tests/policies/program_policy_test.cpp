#include "policies/program_policy.hpp"

#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>
#include <random>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "kernels/program/program_space.hpp"
#include "policies/program_tokenizer.hpp"
#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

using testing::all_tasks;
using testing::make_prompt;

policy_config small_config() {
  policy_config c;
  c.d_model = 32;
  c.layers = 2;
  c.heads = 4;
  c.max_context = 256;
  return c;
}

TEST(ProgramPolicy, ValidatesItsConfig) {
  policy_config c = small_config();
  EXPECT_TRUE(validate_config(c));
  c.heads = 5;
  auto st = validate_config(c);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("multiple of heads"), std::string::npos);
  EXPECT_THROW(program_policy(c, 1), std::invalid_argument);
  c = small_config();
  c.target = "tpu";
  EXPECT_FALSE(validate_config(c));
}

TEST(ProgramPolicy, EverySampleIsALegalProgram) {
  program_policy policy(small_config(), 1);
  program_tokenizer tok;
  for (const auto& t : all_tasks()) {
    for (double temperature : {1.0, 0.5, 2.0}) {
      auto samples = policy.sample(make_prompt(t), 8, temperature, 11);
      ASSERT_TRUE(samples) << t.name << ": " << samples.message();
      ASSERT_EQ(samples->size(), 8u);
      for (const auto& s : *samples) {
        EXPECT_TRUE(kernels::validate_program(t, s.prog)) << t.name << ": " << s.program_text;
        auto parsed = kernels::parse_program(s.program_text);
        ASSERT_TRUE(parsed);
        EXPECT_EQ(*parsed, s.prog);
        auto rep = tok.replay(t, s.tokens);
        ASSERT_TRUE(rep) << rep.message();
        EXPECT_EQ(rep->prog, s.prog);
        ASSERT_EQ(s.logprobs.size(), s.tokens.size());
        EXPECT_EQ(s.context, *policy.encode_prompt(make_prompt(t)));
        for (size_t i = 0; i < s.tokens.size(); i += 2)
          EXPECT_EQ(s.logprobs[i], 0.0f) << "slot tokens are forced";
        for (const auto& d : rep->decisions) {
          float lp = s.logprobs[d.choice_index];
          if (d.legal.size() == 1)
            EXPECT_EQ(lp, 0.0f) << "a single option is forced";
          else
            EXPECT_TRUE(lp < 0.0f && lp > -30.0f) << lp;
        }
      }
    }
  }
}

TEST(ProgramPolicy, GreedyAndUnknownTasks) {
  program_policy policy(small_config(), 1);
  auto t = testing::softmax_task();
  auto a = policy.sample(make_prompt(t), 4, 0.0, 1);
  auto b = policy.sample(make_prompt(t), 4, 0.0, 2);
  ASSERT_TRUE(a && b);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ((*a)[i].tokens, (*b)[0].tokens) << "greedy ignores the seed";
  auto bad = t;
  bad.ops.push_back(testing::op("no_such_op"));
  auto err = policy.sample(make_prompt(bad), 2, 1.0, 1);
  ASSERT_FALSE(err);
  EXPECT_NE(err.message().find(bad.name), std::string::npos) << err.message();
  auto none = policy.sample(make_prompt(t), 0, 1.0, 1);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(ProgramPolicy, SampledLogprobsMatchARecomputation) {
  program_policy policy(small_config(), 5);
  auto t = testing::gemm_row_sum_task();
  std::mt19937_64 rng(2);
  exemplar e;
  e.program = kernels::to_text(kernels::random_program(t, rng));
  e.bucket = 4;
  for (double temperature : {1.0, 0.7}) {
    auto samples = policy.sample(make_prompt(t, {e}), 8, temperature, 3);
    ASSERT_TRUE(samples);
    for (const auto& s : *samples) {
      auto lp = policy.log_probs(t, s.context, s.tokens, temperature);
      ASSERT_TRUE(lp) << lp.message();
      ASSERT_EQ(lp->size(), s.logprobs.size());
      for (size_t i = 0; i < lp->size(); ++i) {
        if (s.logprobs[i] == 0.0f)
          EXPECT_EQ((*lp)[i], 0.0f);
        else
          EXPECT_NEAR((*lp)[i], s.logprobs[i], 2e-4) << "token " << i;
      }
    }
  }
}

TEST(ProgramPolicy, SamplingIsDeterministicInTheSeed) {
  program_policy a(small_config(), 9), b(small_config(), 9), c(small_config(), 10);
  auto t = testing::elementwise_task();
  auto sa = *a.sample(make_prompt(t), 8, 1.0, 42);
  auto sb = *b.sample(make_prompt(t), 8, 1.0, 42);
  auto sa2 = *a.sample(make_prompt(t), 8, 1.0, 43);
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].tokens, sb[i].tokens);
    EXPECT_EQ(sa[i].logprobs, sb[i].logprobs);
  }
  bool differ = false;
  for (size_t i = 0; i < sa.size(); ++i) differ |= sa[i].tokens != sa2[i].tokens;
  EXPECT_TRUE(differ) << "another sampling seed should give other programs";
  EXPECT_NE(a.save_weights(), c.save_weights()) << "another init seed should give other weights";
}

TEST(ProgramPolicy, WeightsRoundTripGivesIdenticalSampling) {
  program_policy a(small_config(), 1), b(small_config(), 2);
  auto t = testing::layer_norm_task();
  auto bytes = a.save_weights();
  ASSERT_TRUE(b.load_weights(bytes));
  EXPECT_EQ(b.save_weights(), bytes);
  auto sa = *a.sample(make_prompt(t), 8, 1.0, 5);
  auto sb = *b.sample(make_prompt(t), 8, 1.0, 5);
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].tokens, sb[i].tokens);
    EXPECT_EQ(sa[i].logprobs, sb[i].logprobs);
  }
}

TEST(ProgramPolicy, LoadWeightsChecksTheArchitecture) {
  program_policy a(small_config(), 1);
  policy_config wide = small_config();
  wide.d_model = 64;
  program_policy b(wide, 1);
  auto before = b.save_weights();
  auto st = b.load_weights(a.save_weights());
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("architecture mismatch"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("d_model=32"), std::string::npos) << st.message();
  EXPECT_EQ(b.save_weights(), before) << "a failed load leaves the weights alone";
  auto garbage = b.load_weights(std::vector<char>{'n', 'o', 't', ' ', 'a', ' ', 'm', 'o', 'd', 'e', 'l'});
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.message().find("not a weights blob"), std::string::npos) << garbage.message();
  EXPECT_FALSE(b.load_weights({}));
}

TEST(ProgramPolicy, LongPromptsStayWithinTheContext) {
  policy_config c = small_config();
  c.max_context = 96;
  program_policy policy(c, 1);
  auto t = testing::elementwise_task();
  std::mt19937_64 rng(1);
  std::vector<exemplar> ex;
  for (int i = 0; i < 6; ++i) {
    exemplar e;
    e.program = kernels::to_text(kernels::random_program(t, rng));
    e.bucket = i;
    ex.push_back(e);
  }
  auto samples = policy.sample(make_prompt(t, ex), 4, 1.0, 1);
  ASSERT_TRUE(samples) << samples.message();
  for (const auto& s : *samples) {
    EXPECT_LE(s.context.size() + s.tokens.size(), 96u + 16u);
    EXPECT_TRUE(kernels::validate_program(t, s.prog));
  }
}

}  // namespace
}  // namespace crucible::policies
