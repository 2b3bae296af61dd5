#include "policies/lm/activation_checkpoint.hpp"

#include <gtest/gtest.h>

#include "policies/lm/decoder_model_holder.hpp"
#include "tests/policies/lm/tiny_lms.hpp"

namespace crucible::policies {
namespace {

// The gradient of every parameter of a fixed random projection of the final hidden states.
std::map<std::string, torch::Tensor> gradients(decoder_model& m, const torch::Tensor& ids, bool checkpoint) {
  for (auto& p : m->parameters()) p.mutable_grad() = torch::Tensor();
  auto h = checkpoint ? m->hidden_checkpointed(ids) : m->hidden(ids);
  torch::manual_seed(5);
  auto r = torch::randn(h.sizes());
  (h * r).sum().backward();
  std::map<std::string, torch::Tensor> out;
  for (auto& kv : m->named_parameters(true))  // lm_head has none: hidden() does not reach it
    out[kv.key()] = kv.value().grad().defined() ? kv.value().grad().clone() : torch::Tensor();
  return out;
}

TEST(DecoderLmActivationCheckpoint, SameHiddenStatesAndGradientsAsTheStoredForward) {
  for (auto family : {lm_family::qwen2, lm_family::llama}) {
    auto lm = testing::tiny_lm(family, 53, 7);
    auto& m = lm->model().model;
    auto ids =
        torch::tensor(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, torch::kLong).view({2, 6});
    auto plain = m->hidden(ids), ckpt = m->hidden_checkpointed(ids);
    EXPECT_TRUE(torch::equal(plain, ckpt.detach()));
    auto g0 = gradients(m, ids, false), g1 = gradients(m, ids, true);
    ASSERT_EQ(g0.size(), g1.size());
    for (const auto& [name, g] : g0) {
      ASSERT_EQ(g.defined(), g1[name].defined()) << name;
      if (!g.defined()) continue;
      EXPECT_GT(g.abs().max().item<double>(), 0.0) << name << " has a gradient";
      EXPECT_LT((g - g1[name]).abs().max().item<double>(), 1e-6) << name;
    }
  }
}

// The function runs once in the forward and once more in the backward: its activations are not kept.
TEST(DecoderLmActivationCheckpoint, TheBackwardRecomputesTheFunction) {
  int calls = 0;
  auto w = torch::full({3}, 2.0).requires_grad_(true);
  auto x = torch::tensor(std::vector<float>{1, 2, 3}).requires_grad_(true);
  auto y = checkpointed(
      [&](const torch::Tensor& in) {
        ++calls;
        return (in * w).sin();
      },
      x);
  EXPECT_EQ(calls, 1);
  y.sum().backward();
  EXPECT_EQ(calls, 2);
  auto expect_x = (x.detach() * 2.0).cos() * 2.0, expect_w = (x.detach() * 2.0).cos() * x.detach();
  EXPECT_LT((x.grad() - expect_x).abs().max().item<double>(), 1e-6);
  EXPECT_LT((w.grad() - expect_w).abs().max().item<double>(), 1e-6) << "parameters get their gradient";

  // Without grad mode no node is made and nothing is recomputed.
  torch::NoGradGuard no_grad;
  auto z = checkpointed([&](const torch::Tensor& in) { return in * w; }, x);
  EXPECT_FALSE(z.requires_grad());
}

TEST(DecoderLmActivationCheckpoint, AnAutocastGuardRestoresTheStateItFound) {
  const bool before = cuda_autocast_guard::enabled_now();
  {
    cuda_autocast_guard on(true);
    EXPECT_TRUE(cuda_autocast_guard::enabled_now());
    EXPECT_EQ(cuda_autocast_guard::dtype_now(), at::kBFloat16);
    {
      cuda_autocast_guard off(false);
      EXPECT_FALSE(cuda_autocast_guard::enabled_now());
    }
    EXPECT_TRUE(cuda_autocast_guard::enabled_now());
  }
  EXPECT_EQ(cuda_autocast_guard::enabled_now(), before);
}

}  // namespace
}  // namespace crucible::policies
