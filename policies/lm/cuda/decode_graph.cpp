#include "policies/lm/cuda/decode_graph.hpp"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>

namespace crucible::policies {
namespace {

std::vector<const void*> weight_pointers(decoder_model& m) {
  std::vector<const void*> out;
  for (auto& p : m->parameters()) out.push_back(p.data_ptr());
  return out;
}

}  // namespace

decode_graph::~decode_graph() = default;

expected<std::unique_ptr<decode_graph>> decode_graph::capture(decoder_model& model, int64_t batch,
                                                              int64_t capacity) {
  const auto& w = model->model->embed_tokens->weight;
  if (!w.is_cuda()) return make_error("a decode graph needs the model on a CUDA device");
  if (batch < 1 || capacity < 1) return make_error("a decode graph needs batch >= 1 and capacity >= 1");
  const auto& c = model->config;
  std::unique_ptr<decode_graph> g(new decode_graph());
  g->batch_ = batch;
  g->capacity_ = capacity;
  auto opts = w.options();
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    g->k_.push_back(torch::zeros({batch, c.num_key_value_heads, capacity, c.head_dim}, opts));
    g->v_.push_back(torch::zeros({batch, c.num_key_value_heads, capacity, c.head_dim}, opts));
  }
  g->ids_ = torch::zeros({batch, 1}, opts.dtype(torch::kLong));
  g->position_ = torch::zeros({1}, opts.dtype(torch::kLong));
  torch::NoGradGuard no_grad;
  auto run = [&] {
    return model->logits(model->hidden_step(g->ids_, g->position_, g->k_, g->v_)).squeeze(1);
  };
  try {
    // Capture on a side stream, after warm-up there (lazy library state must not be created inside a
    // capture); a replay runs on whatever stream is current, in order with the sampler's own work.
    auto side = c10::cuda::getStreamFromPool(false, w.device().index());
    c10::cuda::getCurrentCUDAStream(w.device().index()).synchronize();  // the zeroed buffers, once
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 2; ++i) run();
      g->graph_ = std::make_unique<at::cuda::CUDAGraph>();
#if TORCH_VERSION_MAJOR >= 2
      // Thread-local: a learner training on this device from another thread is not disturbed.
      g->graph_->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
      g->graph_->capture_begin();
#endif
      g->logits_ = run();
      g->graph_->capture_end();
    }
    side.synchronize();
  } catch (const std::exception& e) {
    std::string what = e.what();
    return make_error("capturing the decode step failed: " + what.substr(0, what.find('\n')));
  }
  g->weights_ = weight_pointers(model);
  return g;
}

bool decode_graph::captured_from(decoder_model& model) const {
  return weights_ == weight_pointers(model);
}

void decode_graph::load(const lm_cache& cache) {
  torch::NoGradGuard no_grad;
  const int64_t n = cache.length;
  for (size_t i = 0; i < k_.size(); ++i) {
    for (auto [buf, src] : {std::pair{&k_[i], &cache.k[i]}, std::pair{&v_[i], &cache.v[i]}}) {
      buf->narrow(2, 0, n).copy_(src->expand({batch_, -1, -1, -1}));
      // Masked positions still meet a zero weight in the attention: they must hold finite values.
      buf->narrow(2, n, capacity_ - n).zero_();
    }
  }
}

torch::Tensor decode_graph::step(const torch::Tensor& ids, int64_t position) {
  ids_.copy_(ids.view({batch_, 1}));
  position_.fill_(position);
  graph_->replay();
  return logits_;
}

}  // namespace crucible::policies
