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

// Draws one token per row by inverse CDF on the device: the host supplies one uniform number per row (so a
// seed gives the same draw however the rows are laid out), and only the chosen ids come back. Rows of
// `scaled` are log-probs at the temperature; top-k and top-p cut the sorted distribution first.
torch::Tensor draw(const torch::Tensor& scaled, const sampling_options& o, std::mt19937_64& rng) {
  if (o.temperature <= 0) return scaled.argmax(-1);
  const int64_t rows = scaled.size(0), vocab = scaled.size(1);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> u(static_cast<size_t>(rows));
  for (auto& x : u) x = uniform(rng);
  auto probs = scaled.exp().to(torch::kDouble);
  auto target = torch::tensor(u, torch::kDouble).to(scaled.device()).unsqueeze(1);
  const bool filtered = (o.top_k > 0 && o.top_k < vocab) || o.top_p < 1;
  if (!filtered) {
    auto csum = probs.cumsum(-1);
    auto pos = torch::searchsorted(csum, target * csum.narrow(1, vocab - 1, 1)).clamp_max(vocab - 1);
    return pos.squeeze(1);
  }
  torch::Tensor sorted, ids;
  if (o.top_k > 0 && o.top_k < vocab) {
    std::tie(sorted, ids) = probs.topk(o.top_k, -1, /*largest=*/true, /*sorted=*/true);
  } else {
    std::tie(sorted, ids) = probs.sort(-1, /*descending=*/true);
  }
  auto csum = sorted.cumsum(-1);
  // The nucleus: the fewest top tokens whose mass reaches top_p (at least one).
  auto keep = ((csum - sorted) < o.top_p).sum(-1, /*keepdim=*/true).clamp_min(1);
  auto mass = csum.gather(1, keep - 1);
  auto pos = torch::searchsorted(csum, target * mass);
  pos = torch::min(pos, keep - 1);
  return ids.gather(1, pos).squeeze(1);
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
    auto picked = draw(scaled, o, rng);
    auto lp = scaled.gather(1, picked.unsqueeze(1)).squeeze(1).to(torch::kCPU);
    auto picked_host = picked.to(torch::kCPU);
    std::vector<int64_t> picks(picked_host.data_ptr<int64_t>(),
                               picked_host.data_ptr<int64_t>() + picked_host.numel());
    const float* lps = lp.data_ptr<float>();
    std::vector<int64_t> keep_rows;
    std::vector<int64_t> next_live;
    for (size_t r = 0; r < live.size(); ++r) {
      auto& c = out[static_cast<size_t>(live[r])];
      c.tokens.push_back(picks[r]);
      c.logprobs.push_back(lps[r]);
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
