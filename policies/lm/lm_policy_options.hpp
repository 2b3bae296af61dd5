#pragma once
// What the language-model policy is configured with (policy.lm.*): where its model is, how it samples, and
// how its learner trains. Plain data, so config code includes it without the model's headers.
#include <cstdint>
#include <string>

namespace crucible::policies {

struct lm_policy_options {
  std::string checkpoint;      ///< the model's directory (config.json, weights, tokenizer.json)
  std::string device = "cpu";  ///< cpu | cuda | cuda:N
  std::string dtype = "f32";   ///< f32 | bf16 | f16: the weights for sampling (the learner trains fp32)
  /// How the prompt is framed: a chat family's template (instruct checkpoints) or plain text (the model
  /// the sft stage trains: prompt, answer, end of text). auto: plain when the tokenizer has no chat
  /// tokens, else the chat format whose tokens it has (chatml: <|im_start|>, llama3: <|start_header_id|>).
  std::string framing = "auto";  ///< auto | plain | chatml | llama3
  int64_t max_context = 2048;    ///< prompt + answer tokens; exemplars are dropped to fit
  int64_t max_new_tokens = 512;
  double top_p = 1.0;
  int64_t top_k = 0;
  bool cuda_graphs = true;  ///< CUDA: decode from a captured graph of the step (lm_sampler.hpp)
  // The learner's
  int64_t micro_batch = 8;
  bool bf16 = false;                    ///< CUDA: bf16 autocast in training
  bool checkpoint_activations = false;  ///< recompute layers in the backward pass
  double weight_decay = 0.0;
};

}  // namespace crucible::policies
