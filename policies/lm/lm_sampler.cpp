#include "policies/lm/lm_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "policies/lm/decoder_model_holder.hpp"

namespace crucible::policies {
namespace {

status check_tokens(const std::vector<int64_t>& tokens, int64_t vocab, const char* what) {
  for (auto t : tokens)
    if (t < 0 || t >= vocab)
      return make_error(std::string(what) + " token " + std::to_string(t) + " is outside the vocabulary (" +
                        std::to_string(vocab) + ")");
  return {};
}

bool ends_with(const std::vector<int64_t>& tokens, const std::vector<int64_t>& tail) {
  return !tail.empty() && tokens.size() >= tail.size() &&
         std::equal(tail.rbegin(), tail.rend(), tokens.rbegin());
}

// Draws one token per row from filtered probabilities (host side, so a seed gives the same draw on every
// device). Rows of `scaled` are log-probs at the temperature.
std::vector<int64_t> draw(const torch::Tensor& scaled, const sampling_options& o, std::mt19937_64& rng) {
  const int64_t rows = scaled.size(0);
  std::vector<int64_t> out(static_cast<size_t>(rows));
  if (o.temperature <= 0) {
    auto best = scaled.argmax(-1).to(torch::kCPU);
    for (int64_t r = 0; r < rows; ++r) out[static_cast<size_t>(r)] = best[r].item<int64_t>();
    return out;
  }
  // Sorted once on the device; only the candidates top-k and top-p leave come to the host.
  const int64_t vocab = scaled.size(1);
  const int64_t k = o.top_k > 0 ? std::min(o.top_k, vocab) : vocab;
  auto [vals, idx] = scaled.topk(k, -1, /*largest=*/true, /*sorted=*/true);
  auto probs = vals.exp().to(torch::kFloat).to(torch::kCPU).contiguous();
  auto ids = idx.to(torch::kCPU).contiguous();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = probs.data_ptr<float>() + r * k;
    const int64_t* id = ids.data_ptr<int64_t>() + r * k;
    // The nucleus: the fewest top tokens whose mass reaches top_p (at least one).
    double mass = 0;
    int64_t keep = 0;
    while (keep < k) {
      mass += p[keep++];
      if (mass >= o.top_p) break;
    }
    double u = uniform(rng) * mass;
    int64_t pick = keep - 1;
    for (int64_t i = 0; i < keep; ++i) {
      u -= p[i];
      if (u <= 0) {
        pick = i;
        break;
      }
    }
    out[static_cast<size_t>(r)] = id[pick];
  }
  return out;
}

}  // namespace

expected<std::vector<lm_completion>> sample_completions(decoder_lm& lm, const std::vector<int64_t>& prompt,
                                                        const sampling_options& o) {
  const int64_t vocab = lm.config().vocab_size;
  if (prompt.empty()) return make_error("sampling needs a prompt of at least one token");
  if (o.n < 1) return make_error("sampling: n must be >= 1");
  if (!(o.top_p > 0 && o.top_p <= 1)) return make_error("sampling: top_p must be in (0, 1]");
  if (auto st = check_tokens(prompt, vocab, "prompt"); !st) return st.err();
  torch::NoGradGuard no_grad;
  auto& m = lm.model().model;
  const auto device = m->model->embed_tokens->weight.device();
  const double temp = o.temperature > 0 ? o.temperature : 1.0;
  std::mt19937_64 rng(o.seed);
  std::vector<lm_completion> out(static_cast<size_t>(o.n));

  // Prefill once, then share the prompt's cache across the n completions.
  lm_cache cache;
  auto ids = torch::tensor(prompt, torch::kLong).unsqueeze(0).to(device);
  auto last = m->logits(m->hidden(ids, &cache).narrow(1, ids.size(1) - 1, 1)).squeeze(1);
  for (auto* t : {&cache.k, &cache.v})
    for (auto& x : *t) x = x.expand({o.n, -1, -1, -1}).contiguous();
  last = last.expand({o.n, -1});
  std::vector<int64_t> live(static_cast<size_t>(o.n));  // completion of each batch row
  for (int i = 0; i < o.n; ++i) live[static_cast<size_t>(i)] = i;

  for (int64_t step = 0; step < o.max_new_tokens && !live.empty(); ++step) {
    auto scaled = torch::log_softmax(last.to(torch::kFloat) / temp, -1);
    auto picks = draw(scaled, o, rng);
    auto picked = torch::tensor(picks, torch::kLong).to(device);
    auto lp = scaled.gather(1, picked.unsqueeze(1)).squeeze(1).to(torch::kCPU);
    std::vector<int64_t> keep_rows;
    std::vector<int64_t> next_live;
    for (size_t r = 0; r < live.size(); ++r) {
      auto& c = out[static_cast<size_t>(live[r])];
      c.tokens.push_back(picks[r]);
      c.logprobs.push_back(lp[static_cast<int64_t>(r)].item<float>());
      bool stop = std::find(o.stop_tokens.begin(), o.stop_tokens.end(), picks[r]) != o.stop_tokens.end();
      for (const auto& seq : o.stop_sequences) stop = stop || ends_with(c.tokens, seq);
      if (stop) {
        c.finish = finish_reason::stop;
      } else if (static_cast<int64_t>(c.tokens.size()) < o.max_new_tokens) {
        keep_rows.push_back(static_cast<int64_t>(r));
        next_live.push_back(live[r]);
      }
    }
    if (next_live.empty()) break;
    // Finished completions leave the batch (and their rows of the cache).
    auto rows = torch::tensor(keep_rows, torch::kLong).to(device);
    if (next_live.size() != live.size())
      for (auto* t : {&cache.k, &cache.v})
        for (auto& x : *t) x = x.index_select(0, rows);
    live = std::move(next_live);
    last = m->logits(m->hidden(picked.index_select(0, rows).unsqueeze(1), &cache)).squeeze(1);
  }
  return out;
}

expected<std::vector<float>> completion_logprobs(decoder_lm& lm, const std::vector<int64_t>& prompt,
                                                 const std::vector<int64_t>& completion, double temperature) {
  const int64_t vocab = lm.config().vocab_size;
  if (prompt.empty()) return make_error("log-probs need a prompt of at least one token");
  if (auto st = check_tokens(prompt, vocab, "prompt"); !st) return st.err();
  if (auto st = check_tokens(completion, vocab, "completion"); !st) return st.err();
  if (completion.empty()) return std::vector<float>{};
  torch::NoGradGuard no_grad;
  auto& m = lm.model().model;
  std::vector<int64_t> all = prompt;
  all.insert(all.end(), completion.begin(), completion.end());
  auto ids = torch::tensor(all, torch::kLong).unsqueeze(0).to(m->model->embed_tokens->weight.device());
  const int64_t p = static_cast<int64_t>(prompt.size()), n = static_cast<int64_t>(completion.size());
  // Position i predicts token i + 1: the completion's tokens are predicted by positions p-1 .. p+n-2.
  auto h = m->hidden(ids).narrow(1, p - 1, n);
  auto scaled =
      torch::log_softmax(m->logits(h).to(torch::kFloat) / (temperature > 0 ? temperature : 1.0), -1);
  auto lp =
      scaled.squeeze(0).gather(1, ids.narrow(1, p, n).squeeze(0).unsqueeze(1)).squeeze(1).to(torch::kCPU);
  return std::vector<float>(lp.data_ptr<float>(), lp.data_ptr<float>() + lp.numel());
}

}  // namespace crucible::policies
