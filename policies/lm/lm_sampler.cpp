#include "policies/lm/lm_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "policies/lm/decoder_model_holder.hpp"
#ifdef CRUCIBLE_WITH_CUDA
#include "policies/lm/cuda/decode_graph.hpp"
#endif

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

// One uniform number per row still sampling (greedy draws none), in row order: a seed gives the same draws
// whether finished rows leave the batch (eager) or stay in it (graphed).
std::vector<double> uniforms(const std::vector<bool>& sampling, const sampling_options& o,
                             std::mt19937_64& rng) {
  std::vector<double> u(sampling.size(), 0.5);
  if (o.temperature <= 0) return u;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (size_t r = 0; r < u.size(); ++r)
    if (sampling[r]) u[r] = uniform(rng);
  return u;
}

// Draws one token per row by inverse CDF on the device: the host supplies the row's uniform number `u`, and
// only the chosen ids come back. Rows of `scaled` are log-probs at the temperature; top-k and top-p cut the
// sorted distribution first.
torch::Tensor draw(const torch::Tensor& scaled, const sampling_options& o, const std::vector<double>& u) {
  if (o.temperature <= 0) return scaled.argmax(-1);
  const int64_t vocab = scaled.size(1);
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

// Draws the next token of every row of `logits` [rows, vocab]; `sampling` flags the rows whose completion
// goes on. Returns the drawn ids (on the device) and, on the host, ids and log-probs.
struct drawn {
  torch::Tensor ids;
  std::vector<int64_t> picks;
  std::vector<float> logprobs;
};
drawn draw_next(const torch::Tensor& logits, const std::vector<bool>& sampling, const sampling_options& o,
                std::mt19937_64& rng) {
  const double temp = o.temperature > 0 ? o.temperature : 1.0;
  auto scaled = torch::log_softmax(logits.to(torch::kFloat) / temp, -1);
  drawn d;
  d.ids = draw(scaled, o, uniforms(sampling, o, rng));
  auto lp = scaled.gather(1, d.ids.unsqueeze(1)).squeeze(1).to(torch::kCPU);
  auto host = d.ids.to(torch::kCPU);
  d.picks.assign(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
  d.logprobs.assign(lp.data_ptr<float>(), lp.data_ptr<float>() + lp.numel());
  return d;
}

// Appends a drawn token to a completion; false when the completion ends with it.
bool extend(lm_completion& c, int64_t token, float logprob, const sampling_options& o) {
  c.tokens.push_back(token);
  c.logprobs.push_back(logprob);
  bool stop = std::find(o.stop_tokens.begin(), o.stop_tokens.end(), token) != o.stop_tokens.end();
  for (const auto& seq : o.stop_sequences) stop = stop || ends_with(c.tokens, seq);
  if (stop) c.finish = finish_reason::stop;
  return !stop && static_cast<int64_t>(c.tokens.size()) < o.max_new_tokens;
}

// Eager decoding: finished completions leave the batch (and their rows of the cache).
void decode_eager(decoder_model& m, lm_cache& cache, torch::Tensor last, const sampling_options& o,
                  std::mt19937_64& rng, std::vector<lm_completion>& out) {
  for (auto* t : {&cache.k, &cache.v})
    for (auto& x : *t) x = x.expand({o.n, -1, -1, -1}).contiguous();
  last = last.expand({o.n, -1});
  std::vector<int64_t> live(static_cast<size_t>(o.n));  // completion of each batch row
  for (int i = 0; i < o.n; ++i) live[static_cast<size_t>(i)] = i;
  while (!live.empty()) {
    auto d = draw_next(last, std::vector<bool>(live.size(), true), o, rng);
    std::vector<int64_t> keep_rows, next_live;
    for (size_t r = 0; r < live.size(); ++r)
      if (extend(out[static_cast<size_t>(live[r])], d.picks[r], d.logprobs[r], o)) {
        keep_rows.push_back(static_cast<int64_t>(r));
        next_live.push_back(live[r]);
      }
    if (next_live.empty()) break;
    auto rows = torch::tensor(keep_rows, torch::kLong).to(last.device());
    if (next_live.size() != live.size())
      for (auto* t : {&cache.k, &cache.v})
        for (auto& x : *t) x = x.index_select(0, rows);
    live = std::move(next_live);
    last = m->logits(m->hidden(d.ids.index_select(0, rows).unsqueeze(1), &cache)).squeeze(1);
  }
}

#ifdef CRUCIBLE_WITH_CUDA
constexpr size_t max_decode_graphs = 4;
constexpr int64_t capacity_step = 256;

// A captured step for `batch` rows and at least `needed` positions (capacities come in steps of 256; one
// up to twice the need is reused, so attention over unused capacity stays cheap): reused, or captured and
// kept. Null when capturing fails.
decode_graph* graph_for(decoder_model_holder& h, int64_t batch, int64_t needed) {
  auto& gs = h.decode_graphs;
  gs.erase(std::remove_if(gs.begin(), gs.end(), [&](const auto& g) { return !g->captured_from(h.model); }),
           gs.end());
  const int64_t capacity = (needed + capacity_step - 1) / capacity_step * capacity_step;
  for (auto& g : gs)
    if (g->batch() == batch && g->capacity() >= needed && g->capacity() <= std::max(capacity, 2 * needed))
      return g.get();
  auto g = decode_graph::capture(h.model, batch, capacity);
  if (!g) return nullptr;
  if (gs.size() >= max_decode_graphs) gs.erase(gs.begin());
  gs.push_back(std::move(*g));
  return gs.back().get();
}

// Graphed decoding: the batch keeps its n rows to the end (a finished row's draws are ignored).
void decode_graphed(decode_graph& g, const lm_cache& cache, const torch::Tensor& last,
                    const sampling_options& o, std::mt19937_64& rng, std::vector<lm_completion>& out) {
  g.load(cache);
  std::vector<bool> sampling(static_cast<size_t>(o.n), true);
  int live = o.n;
  torch::Tensor logits = last.expand({o.n, -1});
  for (int64_t step = 0;; ++step) {
    auto d = draw_next(logits, sampling, o, rng);
    for (size_t r = 0; r < sampling.size(); ++r)
      if (sampling[r] && !extend(out[r], d.picks[r], d.logprobs[r], o)) {
        sampling[r] = false;
        --live;
      }
    if (live == 0) break;
    logits = g.step(d.ids, cache.length + step);
  }
}
#endif

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
  std::mt19937_64 rng(o.seed);
  std::vector<lm_completion> out(static_cast<size_t>(o.n));
  if (o.max_new_tokens < 1) return out;

  // Prefill once; the prompt's cache is shared by the n completions.
  lm_cache cache;
  auto ids = torch::tensor(prompt, torch::kLong).unsqueeze(0).to(device);
  auto last = m->logits(m->hidden(ids, &cache).narrow(1, ids.size(1) - 1, 1)).squeeze(1);
#ifdef CRUCIBLE_WITH_CUDA
  if (o.cuda_graphs && device.is_cuda())
    if (auto* g = graph_for(lm.model(), o.n, cache.length + o.max_new_tokens)) {
      decode_graphed(*g, cache, last, o, rng, out);
      return out;
    }
#endif
  decode_eager(m, cache, last, o, rng, out);
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
