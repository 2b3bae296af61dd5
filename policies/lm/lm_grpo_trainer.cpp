#include "policies/lm/lm_grpo_trainer.hpp"

#include <algorithm>
#include <cmath>

#include "policies/grpo_loss.hpp"
#include "policies/lm/decoder_model_holder.hpp"

namespace crucible::policies {
namespace {

struct prepared_sample {
  torch::Tensor ids;  ///< [1, prompt + completion]
  int64_t prompt = 0, completion = 0;
  torch::Tensor old_lp, ref_lp;  ///< [completion]
  double advantage = 0.0;
};

// Positions per log-softmax chunk: the [positions, vocabulary] block stays under the element budget.
int64_t chunk_positions(int64_t vocab, int64_t budget) {
  return std::max<int64_t>(1, budget / std::max<int64_t>(1, vocab));
}

}  // namespace

struct lm_grpo_trainer::impl {
  impl(decoder_lm& l, const lm_train_options& o) : lm(l), options(o), reference(l.config()) {
    auto& model = lm.model().model;
    torch::NoGradGuard no_grad;
    auto src = model->named_parameters(true);
    auto dst = reference->named_parameters(true);
    const auto w = model->model->embed_tokens->weight;
    reference->to(w.device(), w.scalar_type());
    for (auto& kv : dst) kv.value().copy_(src[kv.key()]);
    reference->eval();
    for (auto& p : reference->parameters()) p.set_requires_grad(false);
    optimizer = std::make_unique<torch::optim::AdamW>(
        model->parameters(), torch::optim::AdamWOptions(o.grpo.lr).weight_decay(o.weight_decay));
  }

  decoder_lm& lm;
  lm_train_options options;
  decoder_model reference;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

lm_grpo_trainer::lm_grpo_trainer(decoder_lm& lm, const lm_train_options& options)
    : impl_(std::make_unique<impl>(lm, options)) {}
lm_grpo_trainer::~lm_grpo_trainer() = default;

expected<step_stats> lm_grpo_trainer::step(const std::vector<lm_group>& groups) {
  auto& m = *impl_;
  const auto& cfg = m.options.grpo;
  if (!known_grpo_variant(cfg.variant))
    return make_error("grpo: unknown variant '" + cfg.variant + "' (expected grpo, dr_grpo or dapo)");
  if (cfg.epochs < 1) return make_error("grpo: epochs must be at least 1");
  auto& model = m.lm.model().model;
  const int64_t vocab = model->config.vocab_size;
  const auto device = model->model->embed_tokens->weight.device();
  const double temp = cfg.temperature > 0 ? cfg.temperature : 1.0;
  const int64_t chunk = chunk_positions(vocab, m.options.logit_elements);
  step_stats stats;

  // 1. Advantages per group; each member's sequence, its sampling log-probs and the reference's.
  std::vector<prepared_sample> samples;
  for (const auto& g : groups) {
    std::vector<double> rewards;
    for (const auto& s : g.members) rewards.push_back(s.reward);
    auto adv = group_advantages(rewards, cfg.variant, cfg.reward_clip);
    if (std::all_of(adv.begin(), adv.end(), [](double a) { return a == 0.0; })) {
      ++stats.skipped_groups;
      if (cfg.variant == "dapo") continue;
    }
    for (size_t i = 0; i < g.members.size(); ++i) {
      const auto& s = g.members[i];
      ++stats.samples;
      if (s.prompt.empty() || s.completion.empty()) continue;
      if (s.logprobs.size() != s.completion.size())
        return make_error("grpo: a sample has " + std::to_string(s.logprobs.size()) + " log-probs for " +
                          std::to_string(s.completion.size()) + " completion tokens");
      for (const auto* part : {&s.prompt, &s.completion})
        for (auto t : *part)
          if (t < 0 || t >= vocab)
            return make_error("grpo: token " + std::to_string(t) + " is outside the vocabulary (" +
                              std::to_string(vocab) + ")");
      prepared_sample p;
      std::vector<int64_t> all = s.prompt;
      all.insert(all.end(), s.completion.begin(), s.completion.end());
      p.ids = torch::tensor(all, torch::kLong).unsqueeze(0).to(device);
      p.prompt = static_cast<int64_t>(s.prompt.size());
      p.completion = static_cast<int64_t>(s.completion.size());
      p.old_lp = torch::tensor(s.logprobs, torch::kFloat).to(device);
      p.advantage = adv[i];
      samples.push_back(std::move(p));
    }
  }
  if (samples.empty()) return stats;
  size_t total = 0, longest = 0;
  double adv_abs = 0;
  for (const auto& s : samples) {
    total += static_cast<size_t>(s.completion);
    longest = std::max(longest, static_cast<size_t>(s.completion));
    adv_abs += std::abs(s.advantage);
  }
  stats.tokens = static_cast<int32_t>(total);
  stats.advantage_abs_mean = adv_abs / static_cast<double>(samples.size());

  // Position i predicts token i + 1: a sample's completion is predicted by positions prompt-1 .. end-2.
  auto targets_of = [](const prepared_sample& s) { return s.ids[0].narrow(0, s.prompt, s.completion); };
  auto log_probs = [&](decoder_model& net, const torch::Tensor& h, const torch::Tensor& targets) {
    auto scaled = torch::log_softmax(net->logits(h).to(torch::kFloat) / temp, -1);
    return std::make_pair(scaled.gather(1, targets.unsqueeze(1)).squeeze(1), scaled);
  };
  {
    torch::NoGradGuard no_grad;
    for (auto& s : samples) {
      auto h = m.reference->hidden(s.ids).squeeze(0).narrow(0, s.prompt - 1, s.completion);
      auto targets = targets_of(s);
      std::vector<torch::Tensor> parts;
      for (int64_t c = 0; c < s.completion; c += chunk) {
        const int64_t len = std::min(chunk, s.completion - c);
        parts.push_back(log_probs(m.reference, h.narrow(0, c, len), targets.narrow(0, c, len)).first);
      }
      s.ref_lp = torch::cat(parts);
    }
  }

  // 2. Epochs: one optimizer step each over the whole batch; gradients accumulate sample by sample.
  model->train();
  for (int32_t epoch = 0; epoch < cfg.epochs; ++epoch) {
    m.optimizer->zero_grad();
    grpo_epoch_sums sums;
    for (auto& s : samples) {
      const double weight =
          grpo_token_weight(cfg.variant, samples.size(), static_cast<size_t>(s.completion), longest, total);
      auto h = model->hidden(s.ids).squeeze(0).narrow(0, s.prompt - 1, s.completion);
      // Cut the graph at the hidden states: each chunk's vocabulary-wide log-softmax lives only while its
      // backward runs; the trunk's backward then runs once with the accumulated gradient.
      auto hd = h.detach().requires_grad_(true);
      auto targets = targets_of(s);
      for (int64_t c = 0; c < s.completion; c += chunk) {
        const int64_t len = std::min(chunk, s.completion - c);
        auto [lp, scaled] = log_probs(model, hd.narrow(0, c, len), targets.narrow(0, c, len));
        auto adv = torch::full({len}, s.advantage, lp.options());
        auto terms = grpo_terms(lp, s.old_lp.narrow(0, c, len), s.ref_lp.narrow(0, c, len), adv, cfg);
        auto term = terms.term;
        torch::Tensor entropy;
        if (cfg.entropy_coef != 0.0) {
          entropy = -(scaled.exp() * scaled).sum(1);
          term = term - cfg.entropy_coef * entropy;
        }
        auto loss = (term * weight).sum();
        loss.backward();
        torch::NoGradGuard no_grad;
        if (!entropy.defined()) entropy = -(scaled.exp() * scaled).sum(1);
        sums.add(loss, terms, entropy);
      }
      h.backward(hd.grad());
    }
    stats.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), cfg.max_grad_norm);
    m.optimizer->step();
    sums.record(stats, total);
  }
  model->eval();
  return stats;
}

}  // namespace crucible::policies
