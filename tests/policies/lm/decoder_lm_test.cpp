#include "policies/lm/decoder_lm.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "policies/lm/decoder_model.hpp"
#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/lm_checkpoint.hpp"

namespace crucible::policies {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  auto d = fs::temp_directory_path() / ("crucible-lm-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  return d.string();
}

// Small shapes of both families: Qwen2 with tied embeddings and grouped-query attention; Llama with separate
// output embeddings, attention biases and llama3 RoPE scaling.
decoder_config tiny(lm_family family) {
  decoder_config c;
  c.family = family;
  c.vocab_size = 97;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  if (family == lm_family::qwen2) {
    c.qkv_bias = true;
    c.tie_word_embeddings = true;
    c.rope_theta = 1e6;
  } else {
    c.qkv_bias = c.o_bias = true;
    c.rope_theta = 5e5;
    c.rope_scaling.factor = 8;
    c.rope_scaling.original_max_position_embeddings = 16;
  }
  return c;
}

std::vector<int64_t> some_tokens(int n, int64_t vocab) {
  std::vector<int64_t> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + 11) % vocab);
  return t;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return a.size() == b.size() ? m : INFINITY;
}

class DecoderLm : public ::testing::TestWithParam<lm_family> {};

TEST_P(DecoderLm, ASavedCheckpointLoadsBackToTheSameLogits) {
  auto lm = decoder_lm::create(tiny(GetParam()), 3);
  ASSERT_TRUE(lm) << lm.message();
  EXPECT_EQ((*lm)->parameter_count(), (*lm)->config().parameter_count());
  const auto dir = scratch("rt");
  ASSERT_TRUE((*lm)->save(dir));
  EXPECT_TRUE(fs::exists(dir + "/config.json"));
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
  auto back = decoder_lm::load(dir);
  ASSERT_TRUE(back) << back.message();
  const auto tokens = some_tokens(12, 97);
  auto a = (*lm)->logits(tokens), b = (*back)->logits(tokens);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 12u * 97u);
  EXPECT_EQ(max_diff(*a, *b), 0.0f);
  // The files hold exactly the parameters: tied models have no lm_head.
  auto file = read_safetensors(dir + "/model.safetensors");
  ASSERT_TRUE(file);
  bool has_head = false;
  for (const auto& t : file->tensors) has_head |= t.name == "lm_head.weight";
  EXPECT_EQ(has_head, !(*lm)->config().tie_word_embeddings);
}

TEST_P(DecoderLm, Bf16AndShardedCheckpointsLoad) {
  auto lm = decoder_lm::create(tiny(GetParam()), 4);
  ASSERT_TRUE(lm) << lm.message();
  const auto tokens = some_tokens(9, 97);
  auto ref = (*lm)->logits(tokens);
  ASSERT_TRUE(ref);

  const auto bf16 = scratch("bf16");
  ASSERT_TRUE((*lm)->save(bf16, tensor_dtype::bf16));
  auto cfg = read_decoder_config(bf16 + "/config.json");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->torch_dtype, "bfloat16");
  auto b = decoder_lm::load(bf16);
  ASSERT_TRUE(b) << b.message();
  auto lb = (*b)->logits(tokens);
  ASSERT_TRUE(lb);
  EXPECT_LT(max_diff(*ref, *lb), 0.05f) << "bf16 keeps 8 bits of mantissa";
  EXPECT_GT(max_diff(*ref, *lb), 0.0f);

  const auto sharded = scratch("sharded");
  ASSERT_TRUE((*lm)->save(sharded, tensor_dtype::f32, 8 << 10));
  EXPECT_FALSE(fs::exists(sharded + "/model.safetensors"));
  auto index = read_safetensors_index(sharded + "/model.safetensors.index.json");
  ASSERT_TRUE(index) << index.message();
  std::set<std::string> shards;
  for (const auto& [name, shard] : *index) shards.insert(shard);
  EXPECT_GT(shards.size(), 2u);
  auto s = decoder_lm::load(sharded);
  ASSERT_TRUE(s) << s.message();
  auto ls = (*s)->logits(tokens);
  ASSERT_TRUE(ls);
  EXPECT_EQ(max_diff(*ref, *ls), 0.0f);
  // Saving again as one file replaces the shards.
  ASSERT_TRUE((*lm)->save(sharded));
  EXPECT_TRUE(fs::exists(sharded + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(sharded + "/model.safetensors.index.json"));
}

// Decoding with the cache, a chunk or a token at a time, gives the logits of one full forward pass.
TEST_P(DecoderLm, KvCachedDecodingEqualsAFullForwardPass) {
  torch::NoGradGuard no_grad;
  decoder_model m(tiny(GetParam()));
  m->init_weights(5);
  const auto tokens = some_tokens(20, 97);
  auto ids = torch::tensor(tokens, torch::kLong).unsqueeze(0);
  auto full = m->logits(m->hidden(ids));
  lm_cache cache;
  std::vector<torch::Tensor> parts;
  parts.push_back(m->logits(m->hidden(ids.narrow(1, 0, 7), &cache)));
  for (int64_t i = 7; i < 20; ++i) parts.push_back(m->logits(m->hidden(ids.narrow(1, i, 1), &cache)));
  EXPECT_EQ(cache.length, 20);
  auto stepped = torch::cat(parts, 1);
  EXPECT_LT((full - stepped).abs().max().item<float>(), 1e-5f);
  // A batch of two sequences decodes each as it would alone.
  auto other = torch::tensor(some_tokens(20, 89), torch::kLong).unsqueeze(0);
  auto both = m->logits(m->hidden(torch::cat({ids, other}, 0)));
  EXPECT_LT((both[0] - full[0]).abs().max().item<float>(), 1e-5f);
}

// The fixed-shape step (what a CUDA graph captures): caches preallocated beyond the sequence, each step
// written at a position held in a tensor, later positions masked — the logits of the growing cache.
TEST_P(DecoderLm, TheFixedShapeDecodingStepEqualsTheGrowingCache) {
  torch::NoGradGuard no_grad;
  decoder_model m(tiny(GetParam()));
  m->init_weights(6);
  const auto tokens = some_tokens(16, 97);
  auto ids = torch::tensor(tokens, torch::kLong).unsqueeze(0);
  auto full = m->logits(m->hidden(ids));
  const auto& c = m->config;
  const int64_t capacity = 24;
  std::vector<torch::Tensor> k, v;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    // Garbage where no position was written yet: the mask must hide it (finite, as the graph keeps it).
    k.push_back(torch::full({2, c.num_key_value_heads, capacity, c.head_dim}, 3.0));
    v.push_back(torch::full({2, c.num_key_value_heads, capacity, c.head_dim}, -7.0));
  }
  lm_cache prefix;
  m->hidden(ids.narrow(1, 0, 5), &prefix);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i].narrow(2, 0, 5).copy_(prefix.k[i].expand({2, -1, -1, -1}));
    v[i].narrow(2, 0, 5).copy_(prefix.v[i].expand({2, -1, -1, -1}));
  }
  for (int64_t p = 5; p < 16; ++p) {
    auto step_ids = ids.narrow(1, p, 1).expand({2, 1}).contiguous();
    auto h = m->hidden_step(step_ids, torch::tensor({p}, torch::kLong), k, v);
    auto logits = m->logits(h);
    ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{2, 1, c.vocab_size}));
    for (int row = 0; row < 2; ++row)
      EXPECT_LT((logits[row][0] - full[0][p]).abs().max().item<float>(), 1e-5f) << "position " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderLm, ::testing::Values(lm_family::qwen2, lm_family::llama),
                         [](const auto& info) { return std::string(model_type_of(info.param)); });

// A checkpoint that does not fit its config is an error naming the tensor.
TEST(DecoderLmCheckpoint, MissingMisshapenAndForeignTensorsAreNamed) {
  auto lm = decoder_lm::create(tiny(lm_family::llama), 6);
  ASSERT_TRUE(lm);
  const auto dir = scratch("bad");
  ASSERT_TRUE((*lm)->save(dir));
  const auto file = dir + "/model.safetensors";
  auto good = read_safetensors(file);
  ASSERT_TRUE(good);
  auto rewrite = [&](auto edit) {
    auto f = *good;
    edit(f);
    ASSERT_TRUE(write_safetensors(file, f));
  };
  auto load_error = [&] {
    auto r = decoder_lm::load(dir);
    return r ? std::string("loaded") : r.message();
  };
  rewrite([](safetensors_file& f) {
    f.tensors.erase(
        std::remove_if(f.tensors.begin(), f.tensors.end(),
                       [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; }),
        f.tensors.end());
  });
  EXPECT_NE(load_error().find("tensor 'model.layers.1.mlp.up_proj.weight' is missing"), std::string::npos)
      << load_error();
  rewrite([](safetensors_file& f) {
    for (auto& t : f.tensors)
      if (t.name == "model.norm.weight") t.shape = {4, 8};
  });
  EXPECT_NE(load_error().find("tensor 'model.norm.weight' has shape [4, 8], the config needs [32]"),
            std::string::npos)
      << load_error();
  rewrite([](safetensors_file& f) {
    auto extra = f.tensors.back();
    extra.name = "model.layers.9.self_attn.q_norm.weight";
    f.tensors.push_back(extra);
  });
  EXPECT_NE(load_error().find("'model.layers.9.self_attn.q_norm.weight' is not part of a llama model"),
            std::string::npos)
      << load_error();
  rewrite([](safetensors_file& f) {
    for (auto& t : f.tensors)
      if (t.name == "model.norm.weight") {
        t.dtype = tensor_dtype::i32;
      }
  });
  EXPECT_NE(load_error().find("is not a weight dtype"), std::string::npos) << load_error();
  // Old checkpoints' rotary buffers are not parameters, and are skipped.
  rewrite([](safetensors_file& f) {
    auto extra = f.tensors.back();
    extra.name = "model.layers.0.self_attn.rotary_emb.inv_freq";
    f.tensors.push_back(extra);
  });
  EXPECT_EQ(load_error(), "loaded");
  fs::remove(file);
  EXPECT_NE(load_error().find("neither model.safetensors nor model.safetensors.index.json"),
            std::string::npos);
}

TEST(DecoderLmCheckpoint, TokensOutsideTheVocabularyAndBadConfigsAreErrors) {
  auto lm = decoder_lm::create(tiny(lm_family::qwen2), 1);
  ASSERT_TRUE(lm);
  auto r = (*lm)->logits({1, 97});
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("token 97 is outside the vocabulary (97)"), std::string::npos);
  auto c = tiny(lm_family::qwen2);
  c.num_key_value_heads = 3;
  EXPECT_FALSE(decoder_lm::create(c, 1));
}

}  // namespace
}  // namespace crucible::policies
