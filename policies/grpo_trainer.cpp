#include "policies/grpo_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "policies/grpo_loss.hpp"
#include "policies/program_policy_impl.hpp"
#include "policies/trainer_state.hpp"

namespace crucible::policies {
namespace {

constexpr int64_t state_format = 1;
constexpr size_t max_chunk = 64;  // sequences per forward pass (gradients accumulate across chunks)

torch::optim::AdamOptions& adam_options(torch::optim::Adam& opt) {
  return static_cast<torch::optim::AdamOptions&>(opt.param_groups()[0].options());
}

}  // namespace

std::vector<double> group_advantages(const std::vector<double>& rewards, const std::string& variant,
                                     double clip) {
  const size_t n = rewards.size();
  std::vector<double> r(n), a(n, 0.0);
  for (size_t i = 0; i < n; ++i) r[i] = std::isfinite(rewards[i]) ? rewards[i] : 0.0;  // a failure earns 0
  if (n < 2) return a;
  double mean = 0.0;
  for (double x : r) mean += x;
  mean /= static_cast<double>(n);
  double var = 0.0;
  for (double x : r) var += (x - mean) * (x - mean);
  const double sd = std::sqrt(var / static_cast<double>(n));
  if (sd < 1e-9) return a;  // no signal in this group
  for (size_t i = 0; i < n; ++i) {
    a[i] = variant == "dr_grpo" ? r[i] - mean : (r[i] - mean) / (sd + 1e-6);
    if (clip > 0) a[i] = std::clamp(a[i], -clip, clip);
  }
  return a;
}

struct grpo_trainer::impl {
  impl(program_policy::impl& p, const grpo_config& c) : pol(p), config(c), reference(p.model->shape) {
    copy_parameters(pol.model, reference);
    reference->eval();
    for (auto& t : reference->parameters()) t.set_requires_grad(false);
    optimizer =
        std::make_unique<torch::optim::Adam>(pol.model->parameters(), torch::optim::AdamOptions(c.lr));
  }

  program_policy::impl& pol;
  grpo_config config;
  causal_transformer reference;
  std::unique_ptr<torch::optim::Adam> optimizer;
  int64_t steps = 0;
};

grpo_trainer::grpo_trainer(program_policy& policy, const grpo_config& config, uint64_t seed)
    : impl_(std::make_unique<impl>(*policy.impl_, config)) {}

grpo_trainer::~grpo_trainer() = default;

expected<step_stats> grpo_trainer::step(const std::vector<scored_group>& groups,
                                        const std::map<std::string, task_spec>& tasks) {
  at::AutoGradMode grad_on(true);  // whatever the thread's mode (an embedded Python turns it off)
  auto& m = *impl_;
  const auto& cfg = m.config;
  if (!known_grpo_variant(cfg.variant))
    return make_error("grpo: unknown variant '" + cfg.variant + "' (expected grpo, dr_grpo or dapo)");
  if (cfg.epochs < 1) return make_error("grpo: epochs must be at least 1");
  step_stats stats;

  // 1. Advantages per group, and each member replayed on its task to recover the decision masks.
  std::vector<replayed_sample> samples;
  std::vector<double> advantage;           // per sample
  std::vector<std::vector<float>> old_lp;  // per sample, per scored decision
  for (const auto& g : groups) {
    auto it = tasks.find(g.task);
    if (it == tasks.end()) return make_error("grpo: no task '" + g.task + "' for group '" + g.group_id + "'");
    std::vector<double> rewards;
    rewards.reserve(g.members.size());
    for (const auto& mem : g.members) rewards.push_back(mem.reward);
    auto adv = group_advantages(rewards, cfg.variant, cfg.reward_clip);
    const bool no_signal = std::all_of(adv.begin(), adv.end(), [](double a) { return a == 0.0; });
    if (no_signal) {
      ++stats.skipped_groups;
      if (cfg.variant == "dapo") continue;
    }
    for (size_t i = 0; i < g.members.size(); ++i) {
      const auto& c = g.members[i].cand;
      auto rep = m.pol.tokenizer.replay(it->second, c.tokens);
      if (!rep || c.logprobs.size() != c.tokens.size() || c.context.empty()) {
        ++stats.skipped_samples;
        continue;
      }
      replayed_sample s;
      s.sequence = c.context;
      s.sequence.insert(s.sequence.end(), c.tokens.begin(), c.tokens.end());
      s.context_length = static_cast<int32_t>(c.context.size());
      std::vector<float> lps;
      for (auto& d : rep->decisions) {
        if (d.legal.size() < 2) continue;
        lps.push_back(c.logprobs[d.choice_index]);
        s.decisions.push_back(std::move(d));
      }
      ++stats.samples;
      if (s.decisions.empty()) continue;  // nothing was chosen: no token to train
      samples.push_back(std::move(s));
      advantage.push_back(adv[i]);
      old_lp.push_back(std::move(lps));
    }
  }
  if (samples.empty()) return stats;

  // 2. Per-decision tensors, in chunk order; loss weights that make chunking invisible.
  const size_t n = samples.size();
  size_t total_decisions = 0, longest = 0;
  for (const auto& s : samples) {
    total_decisions += s.decisions.size();
    longest = std::max(longest, s.decisions.size());
  }
  std::vector<decision_batch> chunks;
  std::vector<torch::Tensor> chunk_adv, chunk_old, chunk_w, chunk_ref;
  double adv_abs = 0.0;
  for (double a : advantage) adv_abs += std::abs(a);
  stats.advantage_abs_mean = adv_abs / static_cast<double>(n);
  for (size_t start = 0; start < n; start += max_chunk) {
    const size_t end = std::min(n, start + max_chunk);
    std::vector<const replayed_sample*> ptrs;
    std::vector<float> a, o, w;
    for (size_t i = start; i < end; ++i) {
      ptrs.push_back(&samples[i]);
      const double weight =
          grpo_token_weight(cfg.variant, n, samples[i].decisions.size(), longest, total_decisions);
      for (size_t j = 0; j < samples[i].decisions.size(); ++j) {
        a.push_back(static_cast<float>(advantage[i]));
        o.push_back(old_lp[i][j]);
        w.push_back(static_cast<float>(weight));
      }
    }
    chunks.push_back(make_decision_batch(ptrs));
    chunk_adv.push_back(torch::tensor(a));
    chunk_old.push_back(torch::tensor(o));
    chunk_w.push_back(torch::tensor(w));
    {
      torch::NoGradGuard no_grad;
      auto ref = legal_log_probs(m.reference, chunks.back(), cfg.temperature);
      chunk_ref.push_back(ref.gather(1, chunks.back().chosen).squeeze(1));
    }
  }
  stats.tokens = static_cast<int32_t>(total_decisions);

  // 3. Epochs: one optimizer step each over the whole batch.
  auto& model = m.pol.model;
  model->train();
  for (int32_t epoch = 0; epoch < cfg.epochs; ++epoch) {
    m.optimizer->zero_grad();
    grpo_epoch_sums sums;
    for (size_t c = 0; c < chunks.size(); ++c) {
      auto all = legal_log_probs(model, chunks[c], cfg.temperature);  // [N, O]
      auto lp = all.gather(1, chunks[c].chosen).squeeze(1);           // [N]
      auto terms = grpo_terms(lp, chunk_old[c], chunk_ref[c], chunk_adv[c], cfg);
      auto p = all.exp();
      auto entropy = -(p * all.masked_fill(chunks[c].legal_mask.logical_not(), 0.0)).sum(1);
      auto term = terms.term;
      if (cfg.entropy_coef != 0.0) term = term - cfg.entropy_coef * entropy;
      auto loss = (term * chunk_w[c]).sum();
      loss.backward();
      sums.add(loss, terms, entropy);
    }
    stats.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), cfg.max_grad_norm);
    m.optimizer->step();
    sums.record(stats, total_decisions);
  }
  model->eval();
  ++m.steps;
  return stats;
}

std::vector<char> grpo_trainer::save_state() const {
  auto& m = *impl_;
  torch::serialize::OutputArchive ar;
  write_trainer_meta(ar, state_format, m.steps);
  write_parameters(ar, "policy", m.pol.model, m.pol.tokenizer);
  write_parameters(ar, "reference", m.reference, m.pol.tokenizer);
  return finish_trainer_state(ar, *m.optimizer);
}

status grpo_trainer::load_state(const std::vector<char>& bytes) {
  auto& m = *impl_;
  torch::serialize::InputArchive ar;
  auto steps = open_trainer_state(bytes, ar, state_format, "grpo state",
                                  "grpo_trainer::save_state (policy weights alone load with "
                                  "program_policy::load_weights)");
  if (!steps) return steps.err();
  // Load into scratch copies first, so a bad checkpoint leaves the trainer as it was.
  causal_transformer policy_copy(m.pol.model->shape), reference_copy(m.pol.model->shape);
  if (auto st = read_parameters(ar, "policy", policy_copy, m.pol.tokenizer); !st) return st;
  if (auto st = read_parameters(ar, "reference", reference_copy, m.pol.tokenizer); !st) return st;
  auto read = read_optimizer_state(ar, "grpo state");
  if (!read) return read.err();
  auto& opt = *read;
  try {
    torch::optim::Adam scratch(policy_copy->parameters(), torch::optim::AdamOptions(m.config.lr));
    scratch.load(opt);
  } catch (const std::exception& e) {
    return make_error("grpo state: optimizer state does not load: " + std::string(e.what()).substr(0, 200));
  }
  copy_parameters(policy_copy, m.pol.model);
  copy_parameters(reference_copy, m.reference);
  try {
    m.optimizer->load(opt);
  } catch (const std::exception& e) {
    return make_error("grpo state: optimizer state does not load: " + std::string(e.what()).substr(0, 200));
  }
  adam_options(*m.optimizer).lr(m.config.lr);  // the configured rate wins over the checkpoint's
  m.steps = *steps;
  return {};
}

}  // namespace crucible::policies
