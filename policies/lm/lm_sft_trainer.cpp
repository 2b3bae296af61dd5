#include "policies/lm/lm_sft_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "policies/lm/activation_checkpoint.hpp"
#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/lm_train_batch.hpp"
#include "policies/trainer_state.hpp"

namespace crucible::policies {
namespace {

constexpr int64_t state_format = 1;

}  // namespace

double lm_sft_learning_rate(const lm_sft_options& o, int64_t k) {
  if (o.warmup_steps > 0 && k < o.warmup_steps)
    return o.lr * static_cast<double>(std::max<int64_t>(k, 0)) / static_cast<double>(o.warmup_steps);
  if (o.total_steps <= 0) return o.lr;
  const int64_t warm = std::max<int64_t>(o.warmup_steps, 0);
  const double progress =
      o.total_steps > warm
          ? std::clamp(static_cast<double>(k - warm) / static_cast<double>(o.total_steps - warm), 0.0, 1.0)
          : 1.0;
  return o.lr * (0.1 + 0.45 * (1.0 + std::cos(M_PI * progress)));
}

struct lm_sft_trainer::impl {
  impl(decoder_lm& l, const lm_sft_options& o) : lm(l), options(o) {
    optimizer = std::make_unique<torch::optim::AdamW>(
        lm.model().model->parameters(), torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  }

  // The weighted completion-token loss of `batch`: sum(w * nll) / sum(w * tokens). With `train`, its
  // gradient accumulates into the parameters (the caller zeroes and steps). Errors before any forward.
  expected<lm_sft_stats> run(const std::vector<lm_example>& batch, bool train);

  decoder_lm& lm;
  lm_sft_options options;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  int64_t steps = 0;
};

expected<lm_sft_stats> lm_sft_trainer::impl::run(const std::vector<lm_example>& batch, bool train) {
  auto& model = lm.model().model;
  const int64_t vocab = model->config.vocab_size;
  const auto device = model->model->embed_tokens->weight.device();
  const int64_t chunk = chunk_positions(vocab, options.logit_elements);
  const bool bf16 = options.bf16 && on_cuda(model);
  lm_sft_stats stats;
  stats.examples = static_cast<int64_t>(batch.size());

  std::vector<size_t> used;  // examples with a non-zero weight
  double denominator = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& e = batch[i];
    const std::string where = "sft: example " + std::to_string(i);
    if (e.prompt.empty())
      return make_error(where +
                        " has an empty prompt (the first completion token needs a position to be "
                        "predicted from; give at least a BOS token)");
    if (e.completion.empty()) return make_error(where + " has an empty completion: nothing to train");
    if (!std::isfinite(e.weight) || e.weight < 0)
      return make_error(where + " has weight " + std::to_string(e.weight) + " (weights are finite and >= 0)");
    for (const auto* part : {&e.prompt, &e.completion})
      for (auto t : *part)
        if (t < 0 || t >= vocab)
          return make_error(where + ": token " + std::to_string(t) + " is outside the vocabulary (" +
                            std::to_string(vocab) + ")");
    if (e.weight == 0) continue;
    used.push_back(i);
    stats.tokens += static_cast<int64_t>(e.completion.size());
    denominator += e.weight * static_cast<double>(e.completion.size());
  }
  if (used.empty()) return stats;

  std::vector<const std::vector<int64_t>*> prompts, completions;
  std::vector<int64_t> lengths;
  for (size_t i : used) {
    prompts.push_back(&batch[i].prompt);
    completions.push_back(&batch[i].completion);
    lengths.push_back(static_cast<int64_t>(batch[i].prompt.size() + batch[i].completion.size()));
  }
  // Autograd on for a training step, off for an evaluation, whatever the calling thread's mode was: an
  // embedded Python (a KernelBench module's instantiation) turns it off for its thread.
  at::AutoGradMode grad_mode(train);
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  for (const auto& members : micro_batches(lengths, options.micro_batch)) {
    const auto b = make_train_batch(prompts, completions, members, device);
    std::vector<float> weight;
    for (size_t k : members)
      weight.insert(weight.end(), completions[k]->size(),
                    static_cast<float>(batch[used[k]].weight / denominator));
    const auto w = torch::tensor(weight, torch::kFloat).to(device);
    torch::Tensor h;
    {
      cuda_autocast_guard precision(bf16);
      h = completion_hidden(model, b, train && options.checkpoint_activations);
    }
    // As in lm_grpo_trainer: the graph is cut at the hidden states, so one chunk's [positions, vocabulary]
    // log-softmax is held at a time, and the trunk's backward runs once per micro-batch.
    auto hd = train ? h.detach().requires_grad_(true) : h;
    for (int64_t c = 0; c < b.tokens(); c += chunk) {
      const int64_t len = std::min(chunk, b.tokens() - c);
      torch::Tensor loss;
      {
        cuda_autocast_guard precision(bf16);
        auto lp = chunk_logprobs(model, hd.narrow(0, c, len), b.targets.narrow(0, c, len), 1.0);
        loss = -(lp.taken * w.narrow(0, c, len)).sum();
      }
      if (train) loss.backward();
      loss_sum += loss.detach().to(torch::kDouble);  // read once at the end: no device sync per chunk
    }
    if (train) h.backward(hd.grad());
  }
  stats.loss = loss_sum.item<double>();
  return stats;
}

lm_sft_trainer::lm_sft_trainer(decoder_lm& lm, const lm_sft_options& options)
    : impl_(std::make_unique<impl>(lm, options)) {}
lm_sft_trainer::~lm_sft_trainer() = default;

expected<lm_sft_stats> lm_sft_trainer::step(const std::vector<lm_example>& batch) {
  auto& m = *impl_;
  auto& model = m.lm.model().model;
  m.optimizer->zero_grad();
  model->train();
  auto stats = m.run(batch, true);
  model->eval();
  if (!stats || stats->tokens == 0) {
    m.optimizer->zero_grad();
    return stats;
  }
  const double lr = lm_sft_learning_rate(m.options, m.steps + 1);
  static_cast<torch::optim::AdamWOptions&>(m.optimizer->param_groups()[0].options()).lr(lr);
  const double max_norm =
      m.options.max_grad_norm > 0 ? m.options.max_grad_norm : std::numeric_limits<double>::infinity();
  stats->grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
  stats->lr = lr;
  m.optimizer->step();
  ++m.steps;
  return stats;
}

expected<double> lm_sft_trainer::evaluate(const std::vector<lm_example>& batch) {
  auto stats = impl_->run(batch, false);
  if (!stats) return stats.err();
  return stats->loss;
}

std::vector<char> lm_sft_trainer::save_state() const {
  auto& m = *impl_;
  torch::serialize::OutputArchive ar;
  write_trainer_meta(ar, state_format, m.steps);
  return finish_trainer_state(ar, *m.optimizer);
}

status lm_sft_trainer::load_state(const std::vector<char>& bytes) {
  auto& m = *impl_;
  torch::serialize::InputArchive ar;
  auto steps = open_trainer_state(bytes, ar, state_format, "sft state", "lm_sft_trainer::save_state");
  if (!steps) return steps.err();
  auto opt = read_optimizer_state(ar, "sft state");
  if (!opt) return opt.err();
  try {
    probe_adamw_state(m.optimizer->param_groups()[0].params(), *opt);
    m.optimizer->load(*opt);
  } catch (const std::exception& e) {
    return make_error("sft state: the optimizer state does not fit this model: " + first_line(e));
  }
  static_cast<torch::optim::AdamWOptions&>(m.optimizer->param_groups()[0].options())
      .weight_decay(m.options.weight_decay);
  m.steps = *steps;
  return {};
}

int64_t lm_sft_trainer::steps() const {
  return impl_->steps;
}

}  // namespace crucible::policies
