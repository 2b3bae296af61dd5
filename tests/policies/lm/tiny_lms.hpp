#pragma once
// Small decoder LMs for the tests of this folder: a few thousand parameters, random weights from a seed.
#include <memory>

#include <gtest/gtest.h>

#include "policies/lm/decoder_lm.hpp"

namespace crucible::policies::testing {

inline std::unique_ptr<decoder_lm> tiny_lm(lm_family family, int64_t vocab, uint64_t seed) {
  decoder_config c;
  c.family = family;
  c.vocab_size = vocab;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.qkv_bias = family == lm_family::qwen2;
  c.tie_word_embeddings = family == lm_family::qwen2;
  auto lm = decoder_lm::create(c, seed);
  EXPECT_TRUE(lm) << lm.message();
  return lm ? std::move(*lm) : nullptr;
}

}  // namespace crucible::policies::testing
