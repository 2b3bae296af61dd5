#pragma once
// The language-model policy's learner: scored groups become token sequences (the prompt as context, the
// answer as the trained completion) for GRPO (lm_grpo_trainer) or, in the self-supervised stage, REINFORCE
// on a 0/1 correctness reward — the supervised loss on the correct answers (lm_sft_trainer), which is its
// gradient for on-policy samples.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policies/lm/lm_policy.hpp"
#include "policies/policy.hpp"

namespace crucible::policies {

class lm_learner final : public policy_learner {
 public:
  /// `policy` must outlive the learner; the reference of GRPO's KL term is a frozen copy of it as it is now.
  lm_learner(lm_policy& policy, const grpo_config& grpo, learning_objective objective);
  ~lm_learner() override;

  expected<step_stats> step(const std::vector<scored_group>& groups,
                            const std::map<std::string, task_spec>& tasks) override;
  std::vector<char> save_state() const override;
  status load_state(const std::vector<char>& bytes) override;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::policies
