#include "policies/lm/lm_train_batch.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace crucible::policies {

std::vector<std::vector<size_t>> micro_batches(const std::vector<int64_t>& lengths, int64_t size) {
  const size_t per = static_cast<size_t>(std::max<int64_t>(1, size));
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < order.size(); i += per)
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                     order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + per)));
  return out;
}

lm_train_batch make_train_batch(const std::vector<const std::vector<int64_t>*>& prompts,
                                const std::vector<const std::vector<int64_t>*>& completions,
                                const std::vector<size_t>& members, const torch::Device& device) {
  lm_train_batch b;
  b.members = members;
  int64_t longest = 0;
  for (size_t m : members)
    longest = std::max<int64_t>(longest, static_cast<int64_t>(prompts[m]->size() + completions[m]->size()));
  const int64_t rows = static_cast<int64_t>(members.size());
  std::vector<int64_t> ids(static_cast<size_t>(rows * longest), 0), at, targets;
  b.offsets.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& p = *prompts[members[static_cast<size_t>(r)]];
    const auto& c = *completions[members[static_cast<size_t>(r)]];
    auto* row = ids.data() + r * longest;
    std::copy(p.begin(), p.end(), row);
    std::copy(c.begin(), c.end(), row + p.size());
    // Position i predicts token i + 1: the completion is predicted by positions prompt-1 .. prompt+n-2.
    const int64_t first = static_cast<int64_t>(p.size()) - 1;
    for (size_t j = 0; j < c.size(); ++j) at.push_back(r * longest + first + static_cast<int64_t>(j));
    targets.insert(targets.end(), c.begin(), c.end());
    b.offsets.push_back(static_cast<int64_t>(targets.size()));
  }
  b.ids = torch::tensor(ids, torch::kLong).view({rows, longest}).to(device);
  b.rows = torch::tensor(at, torch::kLong).to(device);
  b.targets = torch::tensor(targets, torch::kLong).to(device);
  return b;
}

torch::Tensor completion_hidden(decoder_model& net, const lm_train_batch& batch, bool checkpoint) {
  auto h = checkpoint ? net->hidden_checkpointed(batch.ids) : net->hidden(batch.ids);
  return h.reshape({-1, h.size(-1)}).index_select(0, batch.rows);
}

int64_t chunk_positions(int64_t vocab, int64_t budget) {
  return std::max<int64_t>(1, budget / std::max<int64_t>(1, vocab));
}

lm_chunk_logprobs chunk_logprobs(decoder_model& net, const torch::Tensor& h, const torch::Tensor& targets,
                                 double temperature) {
  lm_chunk_logprobs out;
  out.scaled = torch::log_softmax(net->logits(h).to(torch::kFloat) / temperature, -1);
  out.taken = out.scaled.gather(1, targets.unsqueeze(1)).squeeze(1);
  return out;
}

namespace {

// The optimizer's state is keyed by the parameter's TensorImpl: its address as a string in LibTorch 1.13, the
// address itself in 2.x.
template <class Key>
Key state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << p.unsafeGetTensorImpl();
    return os.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

}  // namespace

void probe_adamw_state(const std::vector<torch::Tensor>& params, torch::serialize::InputArchive& archive) {
  std::vector<torch::Tensor> scratch;
  for (const auto& p : params) scratch.push_back(torch::zeros_like(p).requires_grad_(true));
  torch::optim::AdamW probe(scratch, torch::optim::AdamWOptions(1e-3));
  probe.load(archive);
  // Read only: the loaded moments share their storage with the archive the caller loads next.
  using key_type = typename std::decay_t<decltype(probe.state())>::key_type;
  for (size_t i = 0; i < scratch.size(); ++i) {
    auto it = probe.state().find(state_key<key_type>(scratch[i]));
    if (it == probe.state().end()) continue;  // no step has touched this parameter yet
    const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    for (const auto* m : {&st.exp_avg(), &st.exp_avg_sq()})
      if (!m->defined() || m->sizes() != scratch[i].sizes())
        throw std::runtime_error("the moments of parameter " + std::to_string(i) + " have shape " +
                                 (m->defined() ? c10::str(m->sizes()) : std::string("(none)")) +
                                 ", the parameter " + c10::str(scratch[i].sizes()));
  }
}

bool on_cuda(decoder_model& net) {
  return net->model->embed_tokens->weight.is_cuda();
}

}  // namespace crucible::policies
