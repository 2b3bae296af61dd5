// The language-model policy through the common interface: the framed prompt and its budget, sampling with
// per-token log-probs, answers without code as format failures, weights as bytes and as a model directory,
// and its learner (GRPO and the self-supervised REINFORCE) with checkpointable state.
#include "policies/lm/lm_policy.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "policies/lm/bpe_trainer.hpp"
#include "policies/lm/lm_learner.hpp"
#include "tests/policies/lm/tiny_lms.hpp"
#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

namespace fs = std::filesystem;

const char* kernel_text =
    "## Code\n```cpp\n#include <crucible_abi.h>\nextern \"C\" int crucible_forward(const cru_context* ctx, "
    "const cru_tensor* inputs, int32_t n_inputs, cru_tensor* outputs, int32_t n_outputs) {\n  float* out = "
    "static_cast<float*>(outputs[0].data);\n  for (int64_t i = 0; i < 16; ++i) out[i] = 0.0f;\n  return "
    "0;\n}\n```\n";

bpe_tokenizer small_tokenizer() {
  std::vector<std::string> corpus = {kernel_text, "## Task: softmax_scaled\nThe reference, in PyTorch terms",
                                     "## Performance analysis\n## Algorithm design\n"};
  bpe_training_options o;
  o.vocab_size = 400;
  o.special_tokens = {end_of_text};
  auto t = train_bpe(corpus, o);
  EXPECT_TRUE(t) << t.message();
  return std::move(*t);
}

std::unique_ptr<lm_policy> small_policy(uint64_t seed, int64_t max_new = 24, int64_t max_context = 4096) {
  auto tok = small_tokenizer();
  auto lm = testing::tiny_lm(lm_family::qwen2, tok.vocab_size(), seed);
  lm_policy_options o;
  o.max_new_tokens = max_new;
  o.max_context = max_context;
  o.micro_batch = 2;
  auto p = lm_policy::from_parts(std::move(lm), std::move(tok), o);
  EXPECT_TRUE(p) << p.message();
  return p ? std::move(*p) : nullptr;
}

prompt softmax_prompt(int exemplars) {
  prompt q;
  q.task = testing::softmax_task();
  q.target = "cpu";
  for (int i = 0; i < exemplars; ++i) {
    exemplar e;
    e.source = std::string(kernel_text) + std::string(static_cast<size_t>(200 * (i + 1)), 'x');
    e.speedup = 1.0 + i;
    q.exemplars.push_back(e);
  }
  return q;
}

TEST(LmPolicy, PlainFramingEndsTheAnswerWithEndOfTextAndSpecialTextIsNotParsed) {
  auto p = small_policy(1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->framing(), chat_family::plain);
  auto eot = p->tokenizer().token_id(end_of_text);
  ASSERT_TRUE(eot);
  auto answer = p->encode_answer("done");
  EXPECT_EQ(answer.back(), *eot);
  // An exemplar that spells the end-of-text marker does not end the prompt.
  auto q = softmax_prompt(0);
  exemplar e;
  e.source = std::string("// ") + end_of_text;
  q.exemplars = {e};
  auto ids = p->encode_prompt(q);
  ASSERT_TRUE(ids) << ids.message();
  EXPECT_EQ(std::count(ids->begin(), ids->end(), *eot), 0);
}

TEST(LmPolicy, ThePromptDropsExemplarsToLeaveRoomForTheAnswer) {
  auto wide = small_policy(1, 24, 100000);
  auto full = wide->encode_prompt(softmax_prompt(0));
  ASSERT_TRUE(full);
  std::string text;
  auto with_two = wide->encode_prompt(softmax_prompt(2), &text);
  ASSERT_TRUE(with_two);
  EXPECT_NE(text.find("Kernel 2"), std::string::npos);
  // Room for the prompt without exemplars and the answer, not for the exemplars.
  auto tight = small_policy(1, 24, static_cast<int64_t>(full->size()) + 24 + 10);
  auto cut = tight->encode_prompt(softmax_prompt(2), &text);
  ASSERT_TRUE(cut) << cut.message();
  EXPECT_EQ(text.find("Kernel 1"), std::string::npos);
  auto none = small_policy(1, 24, static_cast<int64_t>(full->size()) / 2 + 24);
  EXPECT_FALSE(none->encode_prompt(softmax_prompt(0)));
}

// Refinement in a chat format: one turn per message, the answers and results never parsed as markers.
TEST(LmPolicy, AttemptsAreTurnsOfTheChatFormat) {
  std::vector<std::string> corpus = {kernel_text, "## Task: softmax_scaled\nThe reference, in PyTorch terms"};
  bpe_training_options to;
  to.vocab_size = 400;
  to.special_tokens = {end_of_text, "<|im_start|>", "<|im_end|>"};
  auto tok = train_bpe(corpus, to);
  ASSERT_TRUE(tok) << tok.message();
  auto lm = testing::tiny_lm(lm_family::qwen2, tok->vocab_size(), 2);
  lm_policy_options o;
  o.max_new_tokens = 24;
  o.max_context = 100000;
  auto p = lm_policy::from_parts(std::move(lm), std::move(*tok), o);
  ASSERT_TRUE(p) << p.message();
  EXPECT_EQ((*p)->framing(), chat_family::chatml);
  auto q = softmax_prompt(1);
  q.attempts = {{"g-0", std::string(kernel_text) + "// <|im_end|><|im_start|>user", "It did not compile."},
                {"g-1", kernel_text, "It is correct, with a verified speedup of 1.2x over PyTorch eager."}};
  auto ids = (*p)->encode_prompt(q);
  ASSERT_TRUE(ids) << ids.message();
  const auto start = *(*p)->tokenizer().token_id("<|im_start|>"),
             end = *(*p)->tokenizer().token_id("<|im_end|>");
  // system, user, (assistant, user) x 2, and the opened assistant turn.
  EXPECT_EQ(std::count(ids->begin(), ids->end(), start), 7);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), end), 6);
  q.attempts.clear();
  auto single = (*p)->encode_prompt(q);
  ASSERT_TRUE(single);
  EXPECT_EQ(std::count(single->begin(), single->end(), start), 3);
}

TEST(LmPolicy, SamplesCarryTheirTokensAndLogProbsAndCodelessAnswersAreFormatFailures) {
  auto p = small_policy(3);
  auto out = p->sample(softmax_prompt(1), 3, 1.0, 11);
  ASSERT_TRUE(out) << out.message();
  ASSERT_EQ(out->size(), 3u);
  auto ctx = p->encode_prompt(softmax_prompt(1));
  for (const auto& c : *out) {
    EXPECT_EQ(c.context, std::vector<int32_t>(ctx->begin(), ctx->end()));
    EXPECT_FALSE(c.tokens.empty());
    EXPECT_LE(c.tokens.size(), 24u);
    EXPECT_EQ(c.logprobs.size(), c.tokens.size());
    // A random model writes no fenced block with the entry point.
    EXPECT_TRUE(c.source.empty());
    EXPECT_FALSE(c.format_error.empty());
  }
  // Deterministic in the seed; the log-probs are those the policy recomputes.
  auto again = p->sample(softmax_prompt(1), 3, 1.0, 11);
  EXPECT_EQ((*again)[1].tokens, (*out)[1].tokens);
  auto lp = p->log_probs(testing::softmax_task(), (*out)[0].context, (*out)[0].tokens, 1.0);
  ASSERT_TRUE(lp) << lp.message();
  for (size_t i = 0; i < lp->size(); ++i) EXPECT_NEAR((*lp)[i], (*out)[0].logprobs[i], 1e-4);
}

TEST(LmPolicy, WeightsTravelAsBytesAndAsAModelDirectory) {
  auto a = small_policy(1), b = small_policy(2);
  auto q = softmax_prompt(0);
  auto sa = a->sample(q, 2, 1.0, 5), sb = b->sample(q, 2, 1.0, 5);
  EXPECT_NE((*sa)[0].tokens, (*sb)[0].tokens);
  ASSERT_TRUE(b->load_weights(a->save_weights()));
  EXPECT_EQ((*b->sample(q, 2, 1.0, 5))[0].tokens, (*sa)[0].tokens);
  EXPECT_FALSE(b->load_weights(std::vector<char>(10, 'x')));
  const auto dir =
      (fs::temp_directory_path() / ("crucible-lm-policy-" + std::to_string(::getpid()))).string();
  ASSERT_TRUE(a->save(dir));
  lm_policy_options o;
  o.checkpoint = dir;
  o.max_new_tokens = 24;
  auto c = lm_policy::load(o);
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ((*c)->framing(), chat_family::plain);
  EXPECT_EQ((*(*c)->sample(q, 2, 1.0, 5))[0].tokens, (*sa)[0].tokens);
  fs::remove_all(dir);
  o.checkpoint = dir;
  auto missing = lm_policy::load(o);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("tokenizer.json"), std::string::npos) << missing.message();
}

scored_group group_of(const std::vector<policy_candidate>& samples, const std::vector<double>& rewards) {
  scored_group g;
  g.group_id = "g";
  g.task = "softmax_scaled";
  for (size_t i = 0; i < samples.size(); ++i) {
    scored_candidate c;
    c.cand.context = samples[i].context;
    c.cand.tokens = samples[i].tokens;
    c.cand.logprobs = samples[i].logprobs;
    c.reward = rewards[i];
    g.members.push_back(c);
  }
  return g;
}

double total_logprob(lm_policy& p, const policy_candidate& c) {
  auto lp = p.log_probs(testing::softmax_task(), c.context, c.tokens, 1.0);
  double s = 0;
  for (float x : *lp) s += x;
  return s;
}

TEST(LmLearner, GrpoRaisesTheRewardedAndReinforceTrainsOnlyTheCorrect) {
  auto p = small_policy(4);
  auto samples = *p->sample(softmax_prompt(0), 4, 1.0, 3);
  grpo_config g;
  g.lr = 1e-2;
  lm_learner grpo(*p, g, learning_objective::grpo);
  const double before_good = total_logprob(*p, samples[0]), before_bad = total_logprob(*p, samples[1]);
  auto st = grpo.step({group_of(samples, {2.0, 0.0, 1.0, 1.0})}, {});
  ASSERT_TRUE(st) << st.message();
  EXPECT_GT(total_logprob(*p, samples[0]), before_good);
  EXPECT_LT(total_logprob(*p, samples[1]), before_bad);

  // REINFORCE on 0/1: nothing correct, no update; one correct, its likelihood rises.
  auto q = small_policy(4);
  lm_learner reinforce(*q, g, learning_objective::reinforce);
  auto w0 = q->save_weights();
  auto none = reinforce.step({group_of(samples, {0, 0, 0, 0})}, {});
  ASSERT_TRUE(none) << none.message();
  EXPECT_EQ(none->tokens, 0);
  EXPECT_EQ(q->save_weights(), w0);
  const double b2 = total_logprob(*q, samples[2]);
  auto one = reinforce.step({group_of(samples, {0, 0, 1, 0})}, {});
  ASSERT_TRUE(one) << one.message();
  EXPECT_EQ(one->tokens, static_cast<int32_t>(samples[2].tokens.size()));
  EXPECT_GT(total_logprob(*q, samples[2]), b2);

  // The learner's state restores the weights and the optimizer: two learners take the same next step.
  auto state = grpo.save_state();
  auto r = small_policy(9);
  lm_learner restored(*r, g, learning_objective::grpo);
  ASSERT_TRUE(restored.load_state(state));
  EXPECT_EQ(r->save_weights(), p->save_weights());
  auto next = group_of(samples, {0.0, 1.0, 0.0, 2.0});
  ASSERT_TRUE(grpo.step({next}, {}));
  ASSERT_TRUE(restored.step({next}, {}));
  auto lp_a = total_logprob(*p, samples[3]), lp_b = total_logprob(*r, samples[3]);
  EXPECT_NEAR(lp_a, lp_b, 1e-3);
  EXPECT_FALSE(restored.load_state(std::vector<char>(5, 'x')));
}

}  // namespace
}  // namespace crucible::policies
