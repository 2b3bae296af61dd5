#pragma once
// The program policy (DESIGN.md §7): a small decoder-only transformer that writes a program decision by
// decision, its logits masked to the legal options of each decision (kernels/program/program_space), so
// every sample is well formed. It is conditioned on the task and on contrastive exemplars (earlier programs
// for the task with their speedup buckets). LibTorch stays in the .cpp files.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/prompt.hpp"

namespace crucible::policies {

struct policy_config {
  int32_t d_model = 64;
  int32_t layers = 2;
  int32_t heads = 4;
  int32_t max_context = 384;  ///< prompt + program tokens; longer prompts drop exemplar tokens first
  std::string target = "cpu";
};

/// One sampled program with what the learner needs to score it again later.
struct policy_sample {
  kernels::program prog;
  std::string program_text;
  std::vector<int32_t> context;  ///< prompt tokens the sample was conditioned on
  std::vector<int32_t> tokens;   ///< program tokens: each decision's slot token, then its choice token
  std::vector<float> logprobs;   ///< per program token; exactly 0 where nothing was chosen (slot tokens,
                                 ///< decisions with a single legal option)
};

class grpo_trainer;

/// Whether `config` describes a buildable policy (positive sizes, d_model a multiple of heads, a known
/// target); the error says which field to fix. Check this before constructing a policy from user config.
status validate_config(const policy_config& config);

/// Thread contract: not thread-safe; one owner (a generator or the learner) at a time.
class program_policy {
 public:
  /// Fresh weights, deterministic in `seed`. Throws std::invalid_argument when validate_config(config)
  /// fails (a programming error once the config was validated).
  program_policy(const policy_config& config, uint64_t seed);
  ~program_policy();
  program_policy(const program_policy&) = delete;
  program_policy& operator=(const program_policy&) = delete;

  /// Samples `n` programs for `p` (its task and exemplars) at `temperature` (<= 0: greedy, log-probs at
  /// temperature 1). The n samples share one prompt pass and decode as one batch; the result depends only
  /// on the weights, `p`, `n`, `temperature` and `seed`. Errors if the task has no program space on the
  /// policy's target.
  expected<std::vector<policy_sample>> sample(const prompt& p, int n, double temperature, uint64_t seed);

  /// The prompt tokens for `p` (what sample() conditions on).
  expected<std::vector<int32_t>> encode_prompt(const prompt& p) const;

  /// Per-token log-probabilities of stored program `tokens` after `context` under the current weights at
  /// `temperature`, laid out like policy_sample::logprobs (0 for slot tokens and single-option decisions).
  /// Errors if the tokens do not replay on `task`. Used to check a sample and by evaluation tools.
  expected<std::vector<float>> log_probs(const task_spec& task, const std::vector<int32_t>& context,
                                         const std::vector<int32_t>& tokens, double temperature = 1.0);

  /// Parameters as bytes (the payload of weights_update) and back. Loading checks the architecture.
  std::vector<char> save_weights() const;
  status load_weights(const std::vector<char>& bytes);

  const policy_config& config() const;
  int64_t parameter_count() const;
  /// Tokens in the policy's vocabulary (program_tokenizer for config().target).
  int32_t vocabulary_size() const;

 private:
  friend class grpo_trainer;
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// LibTorch's intra-op threads for this process (policy inference and training). The runtime sets it once at
/// start: on a small machine the policy shares cores with compilers and the benchmark worker, and a model
/// this small runs fastest on one thread anyway.
void set_intra_op_threads(int threads);

}  // namespace crucible::policies
