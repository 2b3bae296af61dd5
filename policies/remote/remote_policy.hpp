#pragma once
// The remote policy (policy.kind: remote): CUDA-L1's contrastive prompt sent as text to an OpenAI-compatible
// completions endpoint (a vLLM or SGLang server), its n answers parsed like the language model's. Sampling
// only: the weights live on the server, so there is nothing to publish and the learner is off. Optionally a
// tokenizer.json of the served model bounds the prompt to max_context - max_new_tokens tokens (exemplars
// dropped first); without one the prompt is sent whole.
#include <cstdint>
#include <string>
#include <vector>

#include "policies/policy.hpp"
#include "policies/remote/completions_client.hpp"

namespace crucible::policies {

struct remote_policy_options {
  completions_endpoint endpoint;
  std::string framing = "plain";  ///< plain | chatml | llama3: how the prompt text is framed for the server
  std::string tokenizer;          ///< the served model's tokenizer.json, for the token budget (optional)
  int64_t max_context = 8192;
  int64_t max_new_tokens = 1024;
  double top_p = 1.0;
  int64_t top_k = 0;
};

/// Thread contract: not thread-safe; one owner at a time. Each sample() is one blocking HTTP request.
class remote_policy final : public policy {
 public:
  /// Errors: a framing it does not know, a tokenizer that does not load.
  static expected<std::unique_ptr<remote_policy>> make(const remote_policy_options& options);
  ~remote_policy() override;

  policy_kind kind() const override { return policy_kind::remote; }
  void set_interrupt(std::function<bool()> interrupted) override;
  expected<std::vector<policy_candidate>> sample(const prompt& p, int n, double temperature,
                                                 uint64_t seed) override;
  expected<std::vector<float>> log_probs(const task_spec& task, const std::vector<int32_t>& context,
                                         const std::vector<int32_t>& tokens, double temperature) override;
  std::vector<char> save_weights() const override { return {}; }
  status load_weights(const std::vector<char>&) override { return {}; }
  int64_t parameter_count() const override { return 0; }
  bool trainable() const override { return false; }

  /// The prompt text sent for `p` (framed, fitted to the budget).
  expected<std::string> prompt_text(const prompt& p) const;

 private:
  struct impl;
  explicit remote_policy(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::policies
