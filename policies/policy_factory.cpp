#include "policies/policy_factory.hpp"

#include "kernels/program/emit_source.hpp"
#include "policies/lm/lm_learner.hpp"

namespace crucible::policies {
namespace {

// The program policy behind the common interface: its programs emitted as source for the target. An
// emitter failure is the emitter's bug, not the policy's: it surfaces as a compile error with the reason,
// so it is visible and scored, never silently dropped.
class program_kernel_policy final : public policy {
 public:
  program_kernel_policy(const policy_config& c, uint64_t seed) : inner_(c, seed) {}

  policy_kind kind() const override { return policy_kind::program; }

  expected<std::vector<policy_candidate>> sample(const prompt& p, int n, double temperature,
                                                 uint64_t seed) override {
    auto samples = inner_.sample(p, n, temperature, seed);
    if (!samples) return samples.err();
    std::vector<policy_candidate> out;
    for (auto& s : *samples) {
      policy_candidate c;
      c.program = std::move(s.program_text);
      auto src = kernels::emit_source(p.target, p.task, s.prog);
      c.source = src ? std::move(*src) : std::string("#error emitter failed: ") + src.message() + "\n";
      c.context = std::move(s.context);
      c.tokens = std::move(s.tokens);
      c.logprobs = std::move(s.logprobs);
      out.push_back(std::move(c));
    }
    return out;
  }

  expected<std::vector<float>> log_probs(const task_spec& task, const std::vector<int32_t>& context,
                                         const std::vector<int32_t>& tokens, double temperature) override {
    return inner_.log_probs(task, context, tokens, temperature);
  }
  std::vector<char> save_weights() const override { return inner_.save_weights(); }
  status load_weights(const std::vector<char>& bytes) override { return inner_.load_weights(bytes); }
  int64_t parameter_count() const override { return inner_.parameter_count(); }
  bool trainable() const override { return true; }

  program_policy& inner() { return inner_; }

 private:
  program_policy inner_;
};

class program_learner final : public policy_learner {
 public:
  program_learner(program_policy& p, const grpo_config& g, uint64_t seed) : trainer_(p, g, seed) {}
  expected<step_stats> step(const std::vector<scored_group>& groups,
                            const std::map<std::string, task_spec>& tasks) override {
    return trainer_.step(groups, tasks);
  }
  std::vector<char> save_state() const override { return trainer_.save_state(); }
  status load_state(const std::vector<char>& bytes) override { return trainer_.load_state(bytes); }

 private:
  grpo_trainer trainer_;
};

// A policy trained elsewhere (a served model): the learner counts what it is given, so steps, metrics and
// checkpoints go on, and changes nothing.
class untrained_learner final : public policy_learner {
 public:
  expected<step_stats> step(const std::vector<scored_group>& groups,
                            const std::map<std::string, task_spec>&) override {
    step_stats s;
    for (const auto& g : groups) s.samples += static_cast<int32_t>(g.members.size());
    return s;
  }
  std::vector<char> save_state() const override { return {}; }
  status load_state(const std::vector<char>&) override { return {}; }
};

}  // namespace

expected<std::unique_ptr<policy>> make_policy(const policy_options& options, uint64_t seed) {
  switch (options.kind) {
    case policy_kind::program: {
      if (auto st = validate_config(options.program); !st) return st.err();
      return std::unique_ptr<policy>(std::make_unique<program_kernel_policy>(options.program, seed));
    }
    case policy_kind::lm: {
      auto p = lm_policy::load(options.lm);
      if (!p) return make_error("policy.lm: " + p.message());
      return std::unique_ptr<policy>(std::move(*p));
    }
    case policy_kind::remote: {
      auto p = remote_policy::make(options.remote);
      if (!p) return p.err();
      return std::unique_ptr<policy>(std::move(*p));
    }
  }
  return make_error("policy.kind: unknown");
}

expected<std::unique_ptr<policy_learner>> make_learner(policy& p, const grpo_config& grpo,
                                                       learning_objective objective, uint64_t seed) {
  if (!p.trainable()) return std::unique_ptr<policy_learner>(std::make_unique<untrained_learner>());
  if (auto* program = dynamic_cast<program_kernel_policy*>(&p))
    // The program policy's 0/1 stage is GRPO on the 0/1 reward the caller put in (a baseline-corrected
    // REINFORCE over the group).
    return std::unique_ptr<policy_learner>(std::make_unique<program_learner>(program->inner(), grpo, seed));
  if (auto* lm = dynamic_cast<lm_policy*>(&p))
    return std::unique_ptr<policy_learner>(std::make_unique<lm_learner>(*lm, grpo, objective));
  return make_error("no learner for a " + std::string(wire_name(p.kind())) + " policy");
}

}  // namespace crucible::policies
