#include "policies/lm/cuda/decode_graph.hpp"

#include <gtest/gtest.h>

#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/lm_sampler.hpp"
#include "tests/policies/lm/tiny_lms.hpp"

namespace crucible::policies {
namespace {

#define SKIP_WITHOUT_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device"

std::vector<int64_t> prompt_of(int64_t n, int64_t vocab) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back((i * 37 + 11) % vocab);
  return out;
}

// A replayed step gives the eager step's logits, position after position, for every row.
TEST(DecodeGraph, ReplaysGiveTheEagerLogits) {
  SKIP_WITHOUT_CUDA();
  auto lm = testing::tiny_lm(lm_family::qwen2, 101, 3);
  ASSERT_TRUE(lm->place("cuda", tensor_dtype::f32));
  auto& m = lm->model().model;
  torch::NoGradGuard no_grad;
  auto g = decode_graph::capture(m, 3, 64);
  ASSERT_TRUE(g) << g.message();
  auto ids = torch::tensor(prompt_of(30, 101), torch::kLong).unsqueeze(0).cuda();
  lm_cache cache;
  m->hidden(ids.narrow(1, 0, 10), &cache);
  (*g)->load(cache);
  lm_cache eager = cache;
  for (int64_t p = 10; p < 30; ++p) {
    auto want = m->logits(m->hidden(ids.narrow(1, p, 1), &eager)).squeeze(1);
    auto got = (*g)->step(ids.narrow(1, p, 1).expand({3, 1}).reshape({3}), p);
    for (int row = 0; row < 3; ++row)
      EXPECT_LT((got[row] - want[0]).abs().max().item<float>(), 1e-4f) << "position " << p;
  }
  // A second sequence on the same graph starts clean.
  lm_cache again;
  m->hidden(ids.narrow(1, 5, 3), &again);
  (*g)->load(again);
  auto want = m->logits(m->hidden(ids.narrow(1, 8, 1), &again)).squeeze(1);
  auto got = (*g)->step(ids.narrow(1, 8, 1).expand({3, 1}).reshape({3}), 3);
  EXPECT_LT((got[0] - want[0]).abs().max().item<float>(), 1e-4f);
}

// Sampling with and without the graph draws the same completions (same seed, same stops, same log-probs);
// the graph is captured once for a shape, and captured anew when place() moves the weights.
TEST(DecodeGraph, GraphedSamplingDrawsWhatEagerSamplingDraws) {
  SKIP_WITHOUT_CUDA();
  auto lm = testing::tiny_lm(lm_family::llama, 97, 4);
  ASSERT_TRUE(lm->place("cuda", tensor_dtype::f32));
  sampling_options o;
  o.n = 5;
  o.temperature = 0.9;
  o.top_p = 0.95;
  o.max_new_tokens = 40;
  o.stop_tokens = {3, 17};  // ends some completions early: rows finish at different steps
  o.seed = 11;
  const auto prompt = prompt_of(23, 97);
  o.cuda_graphs = false;
  auto eager = sample_completions(*lm, prompt, o);
  ASSERT_TRUE(eager) << eager.message();
  EXPECT_TRUE(lm->model().decode_graphs.empty());
  o.cuda_graphs = true;
  auto graphed = sample_completions(*lm, prompt, o);
  ASSERT_TRUE(graphed) << graphed.message();
  ASSERT_EQ(lm->model().decode_graphs.size(), 1u);
  bool early = false;
  for (size_t i = 0; i < eager->size(); ++i) {
    EXPECT_EQ((*graphed)[i].tokens, (*eager)[i].tokens) << "completion " << i;
    EXPECT_EQ((*graphed)[i].finish, (*eager)[i].finish);
    ASSERT_EQ((*graphed)[i].logprobs.size(), (*eager)[i].logprobs.size());
    for (size_t t = 0; t < (*eager)[i].logprobs.size(); ++t)
      EXPECT_NEAR((*graphed)[i].logprobs[t], (*eager)[i].logprobs[t], 1e-4);
    early = early || (*eager)[i].finish == finish_reason::stop;
  }
  EXPECT_TRUE(early) << "no completion met a stop token: the test does not cover rows finishing early";
  ASSERT_TRUE(sample_completions(*lm, prompt, o));
  EXPECT_EQ(lm->model().decode_graphs.size(), 1u);  // reused

  // New weight tensors (another dtype) make the old graph stale: it is dropped and a new one captured.
  ASSERT_TRUE(lm->place("cuda", tensor_dtype::bf16));
  o.temperature = 0;  // greedy; the paths round bf16 sums differently, so a near-tie may go either way
  o.cuda_graphs = false;
  auto eager16 = sample_completions(*lm, prompt, o);
  o.cuda_graphs = true;
  auto graphed16 = sample_completions(*lm, prompt, o);
  ASSERT_TRUE(eager16 && graphed16);
  ASSERT_EQ(lm->model().decode_graphs.size(), 1u);
  EXPECT_TRUE(lm->model().decode_graphs.front()->captured_from(lm->model().model));
  size_t same = 0;
  for (size_t i = 0; i < eager16->size(); ++i) same += (*eager16)[i].tokens == (*graphed16)[i].tokens;
  EXPECT_GE(same, 4u) << "bf16 graphed and eager greedy decoding diverged in more than one completion";
}

// Weights copied in place (a published update) keep the graph valid and are what it reads.
TEST(DecodeGraph, WeightsCopiedInPlaceAreRead) {
  SKIP_WITHOUT_CUDA();
  auto lm = testing::tiny_lm(lm_family::qwen2, 101, 5);
  auto other = testing::tiny_lm(lm_family::qwen2, 101, 6);
  ASSERT_TRUE(lm->place("cuda", tensor_dtype::f32));
  ASSERT_TRUE(other->place("cuda", tensor_dtype::f32));
  sampling_options o;
  o.n = 2;
  o.temperature = 0;
  o.max_new_tokens = 20;
  const auto prompt = prompt_of(9, 101);
  ASSERT_TRUE(sample_completions(*lm, prompt, o));
  {
    torch::NoGradGuard no_grad;
    auto dst = lm->model().model->parameters(), src = other->model().model->parameters();
    for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
  }
  auto after = sample_completions(*lm, prompt, o);
  auto want = sample_completions(*other, prompt, o);
  ASSERT_TRUE(after && want);
  EXPECT_EQ(lm->model().decode_graphs.size(), 1u);
  EXPECT_EQ((*after)[0].tokens, (*want)[0].tokens);
}

}  // namespace
}  // namespace crucible::policies
