#include "policies/program_policy.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "kernels/program/program_space.hpp"
#include "policies/program_policy_impl.hpp"

#include <ATen/Parallel.h>

namespace crucible::policies {
namespace {

constexpr int64_t weights_format = 1;

int32_t count_prefix(const std::vector<std::string>& slots, std::string_view prefix) {
  int32_t n = 0;
  for (const auto& s : slots) n += s.compare(0, prefix.size(), prefix) == 0;
  return n;
}

std::string arch_string(int64_t vocab, int64_t d, int64_t layers, int64_t heads, int64_t ctx, uint64_t fp) {
  std::ostringstream os;
  os << "vocab=" << vocab << " (fingerprint " << std::hex << fp << std::dec << ") d_model=" << d
     << " layers=" << layers << " heads=" << heads << " max_context=" << ctx;
  return os.str();
}

}  // namespace

status validate_config(const policy_config& c) {
  if (c.d_model <= 0 || c.layers <= 0 || c.heads <= 0 || c.max_context <= 0)
    return make_error("policy: d_model, layers, heads and max_context must be positive (got d_model=" +
                      std::to_string(c.d_model) + " layers=" + std::to_string(c.layers) + " heads=" +
                      std::to_string(c.heads) + " max_context=" + std::to_string(c.max_context) + ")");
  if (c.d_model % c.heads != 0)
    return make_error("policy: d_model (" + std::to_string(c.d_model) + ") must be a multiple of heads (" +
                      std::to_string(c.heads) + ")");
  if (c.max_context < 16) return make_error("policy: max_context must be at least 16 tokens");
  if (c.target != "cpu" && c.target != "cuda")
    return make_error("policy: target '" + c.target + "' is not one of cpu, cuda");
  return {};
}

program_policy::impl::impl(const policy_config& c, uint64_t seed) : config(c), tokenizer(c.target) {
  transformer_shape s;
  s.vocab = tokenizer.size();
  s.d_model = c.d_model;
  s.layers = c.layers;
  s.heads = c.heads;
  s.max_positions = c.max_context;
  model = causal_transformer(s);
  model->init_weights(seed);
  model->eval();
}

int32_t program_policy::impl::program_reserve(const task_spec& t) const {
  // Each decision is two tokens. At most one decision per rewrite slot, one split|fuse per op boundary,
  // and per group (at most one per op) a strategy plus at most every knob.
  const auto& vocab = kernels::vocabulary(config.target);
  const int32_t rewrites = count_prefix(vocab.slots, "rewrite:");
  const int32_t knobs = std::min<int32_t>(count_prefix(vocab.slots, "knob:"), 8);
  const int32_t ops = static_cast<int32_t>(t.ops.size());
  const int32_t bound = 2 * (rewrites + ops + ops * (1 + knobs));
  return std::min(bound, config.max_context / 2);
}

program_policy::program_policy(const policy_config& config, uint64_t seed) {
  if (auto st = validate_config(config); !st) throw std::invalid_argument(st.message());
  impl_ = std::make_unique<impl>(config, seed);
}

program_policy::~program_policy() = default;

const policy_config& program_policy::config() const {
  return impl_->config;
}

int64_t program_policy::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : impl_->model->parameters()) n += p.numel();
  return n;
}

int32_t program_policy::vocabulary_size() const {
  return impl_->tokenizer.size();
}

expected<std::vector<int32_t>> program_policy::encode_prompt(const prompt& p) const {
  return impl_->tokenizer.encode_prompt(p, impl_->config.max_context - impl_->program_reserve(p.task));
}

expected<std::vector<policy_sample>> program_policy::sample(const prompt& p, int n, double temperature,
                                                            uint64_t seed) {
  if (n <= 0) return std::vector<policy_sample>{};
  if (!p.task.module.empty())
    return make_error("task '" + p.task.name +
                      "' is a KernelBench module: the program policy writes C-ABI kernels for op chains");
  auto& tok = impl_->tokenizer;
  auto context = encode_prompt(p);
  if (!context) return context.err();
  auto first_builder = kernels::program_builder::create(p.task, impl_->config.target);
  if (!first_builder) return make_error("task '" + p.task.name + "': " + first_builder.message());
  std::vector<kernels::program_builder> builders(static_cast<size_t>(n),
                                                 *first_builder);  // independent copies
  std::vector<policy_sample> out(n);
  for (auto& s : out) s.context = *context;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);

  torch::NoGradGuard no_grad;
  auto& model = impl_->model;
  model->eval();
  if (!builders[0].done()) {
    // Prefill the shared prompt and the first slot once, then fan out to n samples.
    std::vector<int64_t> first(context->begin(), context->end());
    first.push_back(tok.slot_id(builders[0].next().slot));
    kv_cache cache;
    auto h = model->hidden(torch::tensor(first, torch::kLong).unsqueeze(0), &cache);
    auto logits = model->logits(h.select(1, h.size(1) - 1)).expand({n, -1}).contiguous();
    cache.expand_batch(n);
    // All samples advance in lockstep, two tokens (choice, next slot) per decision, so their positions
    // agree and one cache serves the batch; finished samples are fed <pad>. Tokens are only pushed through
    // the model when some sample faces a decision with a real choice (forced decisions need no logits).
    std::vector<bool> finished(static_cast<size_t>(n), false);
    std::vector<std::vector<int64_t>> pending(static_cast<size_t>(n));
    std::vector<int64_t> feed;
    std::vector<double> z;
    const double temp = temperature > 0 ? temperature : 1.0;
    bool logits_fresh = true;
    torch::TensorAccessor<float, 2> acc = logits.accessor<float, 2>();
    while (true) {
      bool any_active = false, need_logits = false;
      for (int i = 0; i < n; ++i) {
        if (finished[i]) {
          pending[i].push_back(program_tokenizer::pad_id);
          pending[i].push_back(program_tokenizer::pad_id);
          continue;
        }
        auto& b = builders[i];
        const auto& d = b.next();
        const int32_t slot = tok.slot_id(d.slot);
        if (slot < 0) return make_error("slot '" + d.slot + "' is not in the policy's vocabulary");
        size_t pick = 0;
        double lp = 0.0;
        if (d.options.size() > 1) {
          if (!logits_fresh) return make_error("internal: sampling lost track of its logits");
          z.resize(d.options.size());
          for (size_t j = 0; j < d.options.size(); ++j) {
            int32_t c = tok.choice_id(d.slot, d.options[j]);
            if (c < 0)
              return make_error("choice '" + d.slot + "=" + d.options[j] + "' is not in the vocabulary");
            z[j] = acc[i][c] / temp;
          }
          const double mx = *std::max_element(z.begin(), z.end());
          double sum = 0.0;
          for (double x : z) sum += std::exp(x - mx);
          const double lse = mx + std::log(sum);
          if (temperature > 0) {
            const double u = uniform(rng);
            double cum = 0.0;
            pick = d.options.size() - 1;
            for (size_t j = 0; j < z.size(); ++j) {
              cum += std::exp(z[j] - lse);
              if (u < cum) {
                pick = j;
                break;
              }
            }
          } else {
            pick = static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin());
          }
          lp = z[pick] - lse;
        }
        const std::string option = d.options[pick];
        const int32_t choice = tok.choice_id(d.slot, option);
        if (choice < 0) return make_error("choice '" + d.slot + "=" + option + "' is not in the vocabulary");
        out[i].tokens.push_back(slot);
        out[i].tokens.push_back(choice);
        out[i].logprobs.push_back(0.0f);
        out[i].logprobs.push_back(static_cast<float>(lp));
        if (auto st = b.choose(option); !st) return st.err();
        pending[i].push_back(choice);
        if (b.done()) {
          finished[i] = true;
          pending[i].push_back(program_tokenizer::pad_id);
        } else {
          const auto& next = b.next();
          pending[i].push_back(tok.slot_id(next.slot));
          any_active = true;
          need_logits |= next.options.size() > 1;
        }
      }
      if (!any_active) break;
      logits_fresh = need_logits;
      if (!need_logits) continue;
      const size_t t = pending[0].size();
      feed.clear();
      for (auto& row : pending) {
        feed.insert(feed.end(), row.begin(), row.end());
        row.clear();
      }
      auto hs = model->hidden(torch::tensor(feed, torch::kLong).view({n, static_cast<int64_t>(t)}), &cache);
      logits = model->logits(hs.select(1, static_cast<int64_t>(t) - 1)).contiguous();
      acc = logits.accessor<float, 2>();
    }
  }
  for (int i = 0; i < n; ++i) {
    out[i].prog = builders[i].result();
    out[i].program_text = kernels::to_text(out[i].prog);
  }
  return out;
}

expected<std::vector<float>> program_policy::log_probs(const task_spec& task,
                                                       const std::vector<int32_t>& context,
                                                       const std::vector<int32_t>& tokens,
                                                       double temperature) {
  auto rep = impl_->tokenizer.replay(task, tokens);
  if (!rep) return rep.err();
  std::vector<float> out(tokens.size(), 0.0f);
  replayed_sample s;
  s.sequence = context;
  s.sequence.insert(s.sequence.end(), tokens.begin(), tokens.end());
  s.context_length = static_cast<int32_t>(context.size());
  for (auto& d : rep->decisions)
    if (d.legal.size() > 1) s.decisions.push_back(d);
  if (s.decisions.empty()) return out;
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  auto batch = make_decision_batch({&s});
  auto lp = legal_log_probs(impl_->model, batch, temperature).gather(1, batch.chosen).squeeze(1).contiguous();
  auto acc = lp.accessor<float, 1>();
  for (size_t k = 0; k < s.decisions.size(); ++k) out[s.decisions[k].choice_index] = acc[k];
  return out;
}

std::vector<char> program_policy::save_weights() const {
  torch::serialize::OutputArchive ar;
  write_parameters(ar, "policy", impl_->model, impl_->tokenizer);
  std::ostringstream os;
  ar.save_to(os);
  const std::string s = os.str();
  return std::vector<char>(s.begin(), s.end());
}

status program_policy::load_weights(const std::vector<char>& bytes) {
  torch::serialize::InputArchive ar;
  try {
    std::istringstream is(std::string(bytes.begin(), bytes.end()));
    ar.load_from(is);
  } catch (const std::exception& e) {
    return make_error("policy weights: not a weights blob (" + std::to_string(bytes.size()) +
                      " bytes): " + std::string(e.what()).substr(0, 200));
  }
  return read_parameters(ar, "policy", impl_->model, impl_->tokenizer);
}

// ---- shared with grpo_trainer ------------------------------------------------------------------------

decision_batch make_decision_batch(const std::vector<const replayed_sample*>& samples) {
  decision_batch b;
  const int64_t n = static_cast<int64_t>(samples.size());
  int64_t t = 1, decisions = 0, options = 1;
  for (const auto* s : samples) {
    t = std::max<int64_t>(t, static_cast<int64_t>(s->sequence.size()));
    decisions += static_cast<int64_t>(s->decisions.size());
    for (const auto& d : s->decisions)
      options = std::max<int64_t>(options, static_cast<int64_t>(d.legal.size()));
  }
  std::vector<int64_t> tokens(static_cast<size_t>(n * t), program_tokenizer::pad_id);
  std::vector<int64_t> row, col, legal(static_cast<size_t>(decisions * options), 0), chosen;
  std::vector<uint8_t> mask(static_cast<size_t>(decisions * options), 0);
  row.reserve(decisions);
  col.reserve(decisions);
  chosen.reserve(decisions);
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto* s = samples[i];
    std::copy(s->sequence.begin(), s->sequence.end(), tokens.begin() + i * t);
    for (const auto& d : s->decisions) {
      row.push_back(i);
      col.push_back(s->context_length + d.choice_index - 1);
      for (size_t j = 0; j < d.legal.size(); ++j) {
        legal[k * options + j] = d.legal[j];
        mask[k * options + j] = 1;
      }
      chosen.push_back(d.chosen);
      ++k;
    }
  }
  b.tokens = torch::tensor(tokens, torch::kLong).view({n, t});
  b.row = torch::tensor(row, torch::kLong);
  b.col = torch::tensor(col, torch::kLong);
  b.legal = torch::tensor(legal, torch::kLong).view({decisions, options});
  b.legal_mask = torch::tensor(std::vector<int64_t>(mask.begin(), mask.end()), torch::kLong)
                     .view({decisions, options})
                     .to(torch::kBool);
  b.chosen = torch::tensor(chosen, torch::kLong).view({decisions, 1});
  b.sample_of = std::move(row);
  return b;
}

torch::Tensor legal_log_probs(causal_transformer& model, const decision_batch& batch, double temperature) {
  auto h = model->hidden(batch.tokens);           // [B, T, D]
  auto picked = h.index({batch.row, batch.col});  // [N, D]
  auto logits = model->logits(picked);            // [N, V]
  auto legal = logits.gather(1, batch.legal);     // [N, O]
  if (temperature > 0 && temperature != 1.0) legal = legal / temperature;
  legal = legal.masked_fill(batch.legal_mask.logical_not(), -std::numeric_limits<float>::infinity());
  return torch::log_softmax(legal, 1);
}

void write_parameters(torch::serialize::OutputArchive& ar, const std::string& prefix,
                      causal_transformer& model, const program_tokenizer& tok) {
  const auto& s = model->shape;
  ar.write(prefix + ".arch",
           torch::tensor(std::vector<int64_t>{weights_format, s.vocab, s.d_model, s.layers, s.heads,
                                              s.max_positions, static_cast<int64_t>(tok.fingerprint())},
                         torch::kLong));
  for (const auto& kv : model->named_parameters(true))
    ar.write(prefix + ".p." + kv.key(), kv.value().detach());
}

status read_parameters(torch::serialize::InputArchive& ar, const std::string& prefix,
                       causal_transformer& model, const program_tokenizer& tok) {
  const auto& s = model->shape;
  const std::string ours =
      arch_string(s.vocab, s.d_model, s.layers, s.heads, s.max_positions, tok.fingerprint());
  torch::Tensor arch;
  try {
    ar.read(prefix + ".arch", arch);
  } catch (const std::exception&) {
    return make_error(prefix +
                      " weights: no architecture record; these bytes were not written by "
                      "program_policy::save_weights");
  }
  if (arch.dim() != 1 || arch.numel() != 7 || arch.scalar_type() != torch::kLong)
    return make_error(prefix + " weights: malformed architecture record");
  auto a = arch.accessor<int64_t, 1>();
  if (a[0] != weights_format)
    return make_error(prefix + " weights: format " + std::to_string(a[0]) + ", this build reads format " +
                      std::to_string(weights_format));
  const std::string theirs = arch_string(a[1], a[2], a[3], a[4], a[5], static_cast<uint64_t>(a[6]));
  if (theirs != ours)
    return make_error(prefix + " weights: architecture mismatch: the weights are " + theirs +
                      ", this policy is " + ours +
                      " (set the policy config to match the checkpoint, or start from fresh weights; a "
                      "different fingerprint means the op catalogue or program vocabulary changed)");
  // Read everything first, then copy: a failure leaves the model untouched.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> pending;
  for (const auto& kv : model->named_parameters(true)) {
    torch::Tensor t;
    try {
      ar.read(prefix + ".p." + kv.key(), t);
    } catch (const std::exception&) {
      return make_error(prefix + " weights: parameter '" + kv.key() + "' is missing");
    }
    if (!t.sizes().equals(kv.value().sizes()) || t.scalar_type() != kv.value().scalar_type())
      return make_error(prefix + " weights: parameter '" + kv.key() + "' has shape " + c10::str(t.sizes()) +
                        ", expected " + c10::str(kv.value().sizes()));
    pending.emplace_back(kv.value(), t);
  }
  torch::NoGradGuard no_grad;
  for (auto& [dst, src] : pending) dst.copy_(src);
  return {};
}

void copy_parameters(causal_transformer& from, causal_transformer& to) {
  torch::NoGradGuard no_grad;
  auto src = from->named_parameters(true);
  auto dst = to->named_parameters(true);
  for (const auto& kv : src) dst[kv.key()].copy_(kv.value());
}

void set_intra_op_threads(int threads) {
  if (threads >= 1) at::set_num_threads(threads);
}

}  // namespace crucible::policies
