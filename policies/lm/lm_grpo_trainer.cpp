#include "policies/lm/lm_grpo_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "policies/grpo_loss.hpp"
#include "policies/lm/activation_checkpoint.hpp"
#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/lm_train_batch.hpp"
#include "policies/trainer_state.hpp"

namespace crucible::policies {
namespace {

constexpr int64_t state_format = 1;

// A micro-batch with each completion token's sampling log-prob, advantage, loss weight and (once the
// reference pass ran) reference log-prob, all [N] in the batch's token order.
struct prepared_batch {
  lm_train_batch batch;
  torch::Tensor old_lp, adv, weight, ref_lp;
};

torch::optim::AdamWOptions& adamw_options(torch::optim::AdamW& opt) {
  return static_cast<torch::optim::AdamWOptions&>(opt.param_groups()[0].options());
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
  int64_t steps = 0;
};

lm_grpo_trainer::lm_grpo_trainer(decoder_lm& lm, const lm_train_options& options)
    : impl_(std::make_unique<impl>(lm, options)) {}
lm_grpo_trainer::~lm_grpo_trainer() = default;

expected<step_stats> lm_grpo_trainer::step(const std::vector<lm_group>& groups) {
  at::AutoGradMode grad_on(true);  // whatever the thread's mode (an embedded Python turns it off)
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
  const bool bf16 = m.options.bf16 && on_cuda(model);
  step_stats stats;

  // 1. Advantages per group; the samples that enter the loss.
  std::vector<const lm_sample*> samples;
  std::vector<double> advantages;
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
      samples.push_back(&s);
      advantages.push_back(adv[i]);
    }
  }
  if (samples.empty()) return stats;
  size_t total = 0, longest = 0;
  double adv_abs = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    total += samples[i]->completion.size();
    longest = std::max(longest, samples[i]->completion.size());
    adv_abs += std::abs(advantages[i]);
  }
  stats.tokens = static_cast<int32_t>(total);
  stats.advantage_abs_mean = adv_abs / static_cast<double>(samples.size());

  // 2. Micro-batches: the padded sequences and, per completion token, what the objective needs.
  std::vector<const std::vector<int64_t>*> prompts, completions;
  std::vector<int64_t> lengths;
  for (const auto* s : samples) {
    prompts.push_back(&s->prompt);
    completions.push_back(&s->completion);
    lengths.push_back(static_cast<int64_t>(s->prompt.size() + s->completion.size()));
  }
  std::vector<prepared_batch> batches;
  for (const auto& members : micro_batches(lengths, m.options.micro_batch)) {
    prepared_batch p;
    p.batch = make_train_batch(prompts, completions, members, device);
    std::vector<float> old_lp, adv, weight;
    for (size_t k : members) {
      const auto& s = *samples[k];
      const double w = grpo_token_weight(cfg.variant, samples.size(), s.completion.size(), longest, total);
      old_lp.insert(old_lp.end(), s.logprobs.begin(), s.logprobs.end());
      adv.insert(adv.end(), s.completion.size(), static_cast<float>(advantages[k]));
      weight.insert(weight.end(), s.completion.size(), static_cast<float>(w));
    }
    p.old_lp = torch::tensor(old_lp, torch::kFloat).to(device);
    p.adv = torch::tensor(adv, torch::kFloat).to(device);
    p.weight = torch::tensor(weight, torch::kFloat).to(device);
    batches.push_back(std::move(p));
  }

  // 3. The frozen reference's log-probs of every completion token.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : batches) {
      cuda_autocast_guard precision(bf16);
      auto h = completion_hidden(m.reference, p.batch, false);
      std::vector<torch::Tensor> parts;
      for (int64_t c = 0; c < p.batch.tokens(); c += chunk) {
        const int64_t len = std::min(chunk, p.batch.tokens() - c);
        parts.push_back(
            chunk_logprobs(m.reference, h.narrow(0, c, len), p.batch.targets.narrow(0, c, len), temp).taken);
      }
      p.ref_lp = torch::cat(parts);
    }
  }

  // 4. Epochs: one optimizer step each over the whole batch; gradients accumulate across micro-batches.
  model->train();
  for (int32_t epoch = 0; epoch < cfg.epochs; ++epoch) {
    m.optimizer->zero_grad();
    grpo_epoch_sums sums;
    for (auto& p : batches) {
      torch::Tensor h;
      {
        cuda_autocast_guard precision(bf16);
        h = completion_hidden(model, p.batch, m.options.checkpoint_activations);
      }
      // Cut the graph at the hidden states: each chunk's vocabulary-wide log-softmax lives only while its
      // backward runs; the trunk's backward then runs once with the accumulated gradient.
      auto hd = h.detach().requires_grad_(true);
      for (int64_t c = 0; c < p.batch.tokens(); c += chunk) {
        const int64_t len = std::min(chunk, p.batch.tokens() - c);
        torch::Tensor loss, scaled, entropy;
        grpo_token_terms terms;
        {
          cuda_autocast_guard precision(bf16);
          auto lp = chunk_logprobs(model, hd.narrow(0, c, len), p.batch.targets.narrow(0, c, len), temp);
          scaled = lp.scaled;
          terms = grpo_terms(lp.taken, p.old_lp.narrow(0, c, len), p.ref_lp.narrow(0, c, len),
                             p.adv.narrow(0, c, len), cfg);
          auto term = terms.term;
          if (cfg.entropy_coef != 0.0) {
            entropy = -(scaled.exp() * scaled).sum(1);
            term = term - cfg.entropy_coef * entropy;
          }
          loss = (term * p.weight.narrow(0, c, len)).sum();
        }
        loss.backward();
        torch::NoGradGuard no_grad;
        if (!entropy.defined()) entropy = -(scaled.exp() * scaled).sum(1);
        sums.add(loss, terms, entropy);
      }
      h.backward(hd.grad());
    }
    stats.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), cfg.max_grad_norm);
    m.optimizer->step();
    ++m.steps;
    sums.record(stats, total);
  }
  model->eval();
  return stats;
}

std::vector<char> lm_grpo_trainer::save_state() const {
  auto& m = *impl_;
  torch::serialize::OutputArchive ar;
  write_trainer_meta(ar, state_format, m.steps);
  for (auto& kv : m.reference->named_parameters(true)) ar.write("reference." + kv.key(), kv.value());
  return finish_trainer_state(ar, *m.optimizer);
}

status lm_grpo_trainer::load_state(const std::vector<char>& bytes) {
  auto& m = *impl_;
  torch::serialize::InputArchive ar;
  auto steps = open_trainer_state(bytes, ar, state_format, "lm grpo state", "lm_grpo_trainer::save_state");
  if (!steps) return steps.err();
  // Read everything into scratch tensors first, so a bad state leaves the trainer as it was.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> reference;  // (destination, loaded)
  for (auto& kv : m.reference->named_parameters(true)) {
    torch::Tensor t;
    try {
      ar.read("reference." + kv.key(), t);
    } catch (const std::exception&) {
      return make_error("lm grpo state: the reference has no tensor " + kv.key() +
                        " (saved for another model configuration?)");
    }
    if (t.sizes() != kv.value().sizes())
      return make_error("lm grpo state: reference tensor " + kv.key() + " has shape " + c10::str(t.sizes()) +
                        ", the model " + c10::str(kv.value().sizes()));
    reference.emplace_back(kv.value(), t);
  }
  auto opt = read_optimizer_state(ar, "lm grpo state");
  if (!opt) return opt.err();
  try {
    probe_adamw_state(m.optimizer->param_groups()[0].params(), *opt);
    m.optimizer->load(*opt);
  } catch (const std::exception& e) {
    return make_error("lm grpo state: the optimizer state does not fit this model: " + first_line(e));
  }
  adamw_options(*m.optimizer).lr(m.options.grpo.lr).weight_decay(m.options.weight_decay);
  torch::NoGradGuard no_grad;
  for (auto& [dst, src] : reference) dst.copy_(src);
  m.steps = *steps;
  return {};
}

int64_t lm_grpo_trainer::steps() const {
  return impl_->steps;
}

}  // namespace crucible::policies
