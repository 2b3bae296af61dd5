#include "policies/grpo_loss.hpp"

namespace crucible::policies {

bool known_grpo_variant(const std::string& v) {
  return v == "grpo" || v == "dr_grpo" || v == "dapo";
}

grpo_token_terms grpo_terms(const torch::Tensor& lp, const torch::Tensor& old_lp, const torch::Tensor& ref_lp,
                            const torch::Tensor& adv, const grpo_config& cfg) {
  const double lo = 1.0 - cfg.clip;
  const double hi = 1.0 + (cfg.variant == "dapo" ? cfg.clip_high : cfg.clip);
  auto log_ratio = (lp - old_lp).clamp(-grpo_max_log_ratio, grpo_max_log_ratio);
  auto ratio = log_ratio.exp();
  auto surrogate = torch::min(ratio * adv, ratio.clamp(lo, hi) * adv);
  auto d = ref_lp - lp;
  auto k3 = d.exp() - d - 1.0;
  grpo_token_terms t;
  t.term = -surrogate + cfg.kl_coef * k3;
  t.ratio = ratio;
  t.k3 = k3;
  t.clipped = ((ratio < lo) & (adv < 0)) | ((ratio > hi) & (adv > 0));
  return t;
}

void grpo_epoch_sums::add(const torch::Tensor& loss_value, const grpo_token_terms& terms,
                          const torch::Tensor& token_entropy) {
  torch::NoGradGuard no_grad;
  loss += loss_value.item<double>();
  kl += terms.k3.sum().item<double>();
  entropy += token_entropy.sum().item<double>();
  clipped += terms.clipped.sum().item<double>();
  ratio_max = std::max(ratio_max, terms.ratio.max().item<double>());
}

void grpo_epoch_sums::record(step_stats& stats, size_t tokens) const {
  const double nd = static_cast<double>(tokens);
  stats.loss = loss;
  stats.kl = kl / nd;
  stats.entropy = entropy / nd;
  stats.clip_fraction = clipped / nd;
  stats.ratio_max = ratio_max;
}

double grpo_token_weight(const std::string& variant, size_t samples, size_t tokens_in_sample, size_t longest,
                         size_t total_tokens) {
  if (variant == "grpo") return 1.0 / (static_cast<double>(samples) * static_cast<double>(tokens_in_sample));
  if (variant == "dr_grpo") return 1.0 / (static_cast<double>(samples) * static_cast<double>(longest));
  return 1.0 / static_cast<double>(total_tokens);
}

}  // namespace crucible::policies
