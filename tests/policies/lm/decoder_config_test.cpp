#include "policies/lm/decoder_config.hpp"

#include <gtest/gtest.h>

namespace crucible::policies {
namespace {

// The shape of Qwen2.5-0.5B's config.json (the keys transformers writes).
const char* qwen25_05b = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
  "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

// The shape of Llama 3.2-1B's config.json.
const char* llama32_1b = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 128256})";

TEST(DecoderConfig, Qwen25IsReadWithItsBiasesTiedEmbeddingsAndParameterCount) {
  auto c = parse_decoder_config(qwen25_05b, "qwen");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->family, lm_family::qwen2);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{151643});
  EXPECT_EQ(c->parameter_count(), 494032768) << "Qwen2.5-0.5B's published count";
}

TEST(DecoderConfig, Llama32IsReadWithItsRopeScalingAndEosList) {
  auto c = parse_decoder_config(llama32_1b, "llama");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->family, lm_family::llama);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 32.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c->parameter_count(), 1235814400) << "Llama 3.2-1B's published count";
}

// Newer transformers write dtype and one rope_parameters object instead of torch_dtype, rope_theta and
// rope_scaling.
TEST(DecoderConfig, TheNewerRopeParametersLayoutReadsTheSame) {
  auto c = parse_decoder_config(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "dtype": "bfloat16",
      "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
                                "new");
  ASSERT_TRUE(c) << c.message();
  EXPECT_DOUBLE_EQ(c->rope_theta, 5e5);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_EQ(c->torch_dtype, "bfloat16");
  auto plain = parse_decoder_config(R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
      "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}})",
                                    "new");
  ASSERT_TRUE(plain) << plain.message();
  EXPECT_DOUBLE_EQ(plain->rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(plain->rope_scaling.factor, 0.0);
}

TEST(DecoderConfig, WrittenJsonParsesBackToTheSameShape) {
  for (const char* text : {qwen25_05b, llama32_1b}) {
    auto c = parse_decoder_config(text, "a");
    ASSERT_TRUE(c) << c.message();
    auto back = parse_decoder_config(decoder_config_json(*c), "b");
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(decoder_config_json(*back), decoder_config_json(*c));
    EXPECT_EQ(back->parameter_count(), c->parameter_count());
  }
}

TEST(DecoderConfig, UnsupportedAndBrokenConfigsSayWhichKey) {
  auto err = [](const std::string& text) {
    auto c = parse_decoder_config(text, "cfg");
    return c ? std::string("accepted") : c.message();
  };
  const std::string base = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 100)";
  EXPECT_NE(err(R"({"model_type": "gpt2", )" + base + "}").find("model_type 'gpt2' is not supported"),
            std::string::npos);
  EXPECT_NE(err(R"({"model_type": "llama", "hidden_act": "gelu", )" + base + "}").find("hidden_act 'gelu'"),
            std::string::npos);
  EXPECT_NE(err(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 64})")
                .find("intermediate_size is missing"),
            std::string::npos);
  EXPECT_NE(
      err(R"({"model_type": "llama", "num_key_value_heads": 3, )" + base + "}").find("num_key_value_heads"),
      std::string::npos);
  EXPECT_NE(
      err(R"({"model_type": "qwen2", "use_sliding_window": true, )" + base + "}").find("sliding-window"),
      std::string::npos);
  EXPECT_NE(
      err(R"({"model_type": "llama", "rope_scaling": {"rope_type": "yarn", "factor": 4}, )" + base + "}")
          .find("rope_type 'yarn' is not supported"),
      std::string::npos);
  EXPECT_NE(err(R"({"model_type": "llama", "vocab_size": "many", "hidden_size": 64})")
                .find("vocab_size has the wrong type"),
            std::string::npos);
  EXPECT_NE(err("[1, 2]").find("expected a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace crucible::policies
