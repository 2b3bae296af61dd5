#include "policies/lm/lm_learner.hpp"

#include <cstring>

#include "policies/lm/lm_grpo_trainer.hpp"
#include "policies/lm/lm_sft_trainer.hpp"

namespace crucible::policies {
namespace {

constexpr const char* state_magic = "crucible-lm-learner 1\n";

std::vector<int64_t> widen(const std::vector<int32_t>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

void put_blob(std::vector<char>& out, const std::vector<char>& blob) {
  uint64_t n = blob.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.insert(out.end(), blob.begin(), blob.end());
}

bool take_blob(const std::vector<char>& in, size_t& at, std::vector<char>& blob) {
  if (in.size() - at < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  at += 8;
  if (in.size() - at < n) return false;
  blob.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
  at += n;
  return true;
}

}  // namespace

struct lm_learner::impl {
  lm_policy& policy;
  learning_objective objective;
  std::unique_ptr<lm_grpo_trainer> grpo;
  std::unique_ptr<lm_sft_trainer> sft;
  impl(lm_policy& p, learning_objective o) : policy(p), objective(o) {}
};

lm_learner::lm_learner(lm_policy& policy, const grpo_config& grpo, learning_objective objective)
    : impl_(std::make_unique<impl>(policy, objective)) {
  const auto& po = policy.options();
  if (objective == learning_objective::grpo) {
    lm_train_options o;
    o.grpo = grpo;
    o.weight_decay = po.weight_decay;
    o.micro_batch = po.micro_batch;
    o.bf16 = po.bf16;
    o.checkpoint_activations = po.checkpoint_activations;
    impl_->grpo = std::make_unique<lm_grpo_trainer>(policy.model(), o);
  } else {
    lm_sft_options o;
    o.lr = grpo.lr;
    o.weight_decay = po.weight_decay;
    o.max_grad_norm = grpo.max_grad_norm;
    o.warmup_steps = 0;
    o.micro_batch = po.micro_batch;
    o.bf16 = po.bf16;
    o.checkpoint_activations = po.checkpoint_activations;
    impl_->sft = std::make_unique<lm_sft_trainer>(policy.model(), o);
  }
}

lm_learner::~lm_learner() = default;

expected<step_stats> lm_learner::step(const std::vector<scored_group>& groups,
                                      const std::map<std::string, task_spec>&) {
  auto& m = *impl_;
  if (m.objective == learning_objective::grpo) {
    std::vector<lm_group> batch;
    for (const auto& g : groups) {
      lm_group lg;
      for (const auto& c : g.members) {
        lm_sample s;
        s.prompt = widen(c.cand.context);
        s.completion = widen(c.cand.tokens);
        s.logprobs = c.cand.logprobs;
        s.reward = c.reward;
        lg.members.push_back(std::move(s));
      }
      batch.push_back(std::move(lg));
    }
    return m.grpo->step(batch);
  }
  // REINFORCE with a 0/1 reward: the correct answers' log-likelihood, each weighted by its reward.
  step_stats stats;
  std::vector<lm_example> examples;
  for (const auto& g : groups)
    for (const auto& c : g.members) {
      ++stats.samples;
      if (!(c.reward > 0) || c.cand.tokens.empty()) continue;
      lm_example e;
      e.prompt = widen(c.cand.context);
      e.completion = widen(c.cand.tokens);
      e.weight = c.reward;
      examples.push_back(std::move(e));
    }
  if (examples.empty()) return stats;  // nothing correct yet: no signal, no update
  auto s = m.sft->step(examples);
  if (!s) return s.err();
  stats.loss = s->loss;
  stats.tokens = static_cast<int32_t>(s->tokens);
  stats.grad_norm = s->grad_norm;
  return stats;
}

std::vector<char> lm_learner::save_state() const {
  std::vector<char> out(state_magic, state_magic + std::strlen(state_magic));
  put_blob(out, impl_->policy.save_weights());
  put_blob(out, impl_->grpo ? impl_->grpo->save_state() : impl_->sft->save_state());
  return out;
}

status lm_learner::load_state(const std::vector<char>& bytes) {
  const size_t n = std::strlen(state_magic);
  if (bytes.size() < n || std::memcmp(bytes.data(), state_magic, n) != 0)
    return make_error("learner state: not a language-model learner's checkpoint");
  size_t at = n;
  std::vector<char> weights, trainer;
  if (!take_blob(bytes, at, weights) || !take_blob(bytes, at, trainer))
    return make_error("learner state: truncated");
  if (auto st = impl_->policy.load_weights(weights); !st) return st;
  return impl_->grpo ? impl_->grpo->load_state(trainer) : impl_->sft->load_state(trainer);
}

}  // namespace crucible::policies
