#pragma once
// The one interface generators and the learner hold a policy through (DESIGN.md §7), whatever writes the
// kernels: the program policy (programs of kernels/program, emitted as source), the language model (source
// written token by token from the contrastive prompt) or a remote completion endpoint. Chosen by
// `policy.kind`; made by make_policy (policy_factory.hpp). LibTorch stays in the .cpp files.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/expected.hpp"
#include "messages/prompt.hpp"
#include "messages/scored.hpp"
#include "policies/grpo_trainer.hpp"

namespace crucible::policies {

enum class policy_kind { program, lm, remote };

/// The config and wire name ("lm").
const char* wire_name(policy_kind k);
std::optional<policy_kind> parse_policy_kind(std::string_view name);

/// One sampled candidate with what the learner needs to score it again later.
struct policy_candidate {
  std::string program;  ///< program text (program policy); empty for written source
  std::string source;   ///< what the compiler gets; empty when format_error is set
  std::string answer;   ///< a language model's whole answer (analysis, design, code); empty otherwise
  /// Set when the answer holds no usable code (no code block, no entry point): the candidate gets the
  /// `format` verdict without compiling.
  std::string format_error;
  std::vector<int32_t> context;  ///< the prompt's tokens
  std::vector<int32_t> tokens;   ///< the sampled tokens
  std::vector<float> logprobs;   ///< per sampled token, under the sampling distribution
};

/// Thread contract: not thread-safe; one owner (a generator or the learner) at a time.
class policy {
 public:
  virtual ~policy() = default;
  virtual policy_kind kind() const = 0;

  /// `n` candidates for `p` at `temperature`; deterministic in the weights, `p`, `n`, `temperature` and
  /// `seed` (a remote server decides for itself).
  virtual expected<std::vector<policy_candidate>> sample(const prompt& p, int n, double temperature,
                                                         uint64_t seed) = 0;

  /// Log-probabilities of stored `tokens` after `context` under the current weights at `temperature`, laid
  /// out like policy_candidate::logprobs. An error where the policy cannot score (remote).
  virtual expected<std::vector<float>> log_probs(const task_spec& task, const std::vector<int32_t>& context,
                                                 const std::vector<int32_t>& tokens, double temperature) = 0;

  /// The weights as bytes (weights_update's payload, or the file it names) and back; loading checks the
  /// architecture. A remote policy has no weights here: empty bytes, and loading them is a no-op.
  virtual std::vector<char> save_weights() const = 0;
  virtual status load_weights(const std::vector<char>& bytes) = 0;

  virtual int64_t parameter_count() const = 0;
  /// Whether a learner can train it (false for a remote endpoint: its weights live on the server).
  virtual bool trainable() const = 0;

  /// A check that sample() polls while it waits on something outside the process (a served model): true
  /// ends the wait with an error, so a run stopping is not held up by a server that does not answer.
  virtual void set_interrupt(std::function<bool()> interrupted) { (void)interrupted; }
};

/// What the learner optimises on a group: GRPO on the reward (the contrastive stage), or REINFORCE with a
/// 0/1 correctness reward, training on the correct candidates (CUDA-L1's self-supervised stage).
enum class learning_objective { grpo, reinforce };

/// Thread contract: owns the policy it trains while a step runs; one thread.
class policy_learner {
 public:
  virtual ~policy_learner() = default;
  /// One update on `groups` (their members carry context, tokens and sampling log-probs).
  virtual expected<step_stats> step(const std::vector<scored_group>& groups,
                                    const std::map<std::string, task_spec>& tasks) = 0;
  /// Weights, reference and optimizer state, for checkpoints.
  virtual std::vector<char> save_state() const = 0;
  virtual status load_state(const std::vector<char>& bytes) = 0;
};

}  // namespace crucible::policies
