#include "policies/causal_attention_cache.hpp"

#include <limits>

namespace crucible::policies {

int64_t extend_kv_cache(torch::Tensor& k, torch::Tensor& v, torch::Tensor* k_cache, torch::Tensor* v_cache) {
  int64_t past = 0;
  if (!k_cache) return past;
  if (k_cache->defined()) {
    past = k_cache->size(2);
    k = torch::cat({*k_cache, k}, 2);
    v = torch::cat({*v_cache, v}, 2);
  }
  *k_cache = k;
  *v_cache = v;
  return past;
}

torch::Tensor mask_future_keys(const torch::Tensor& scores, int64_t t, int64_t past) {
  if (t <= 1) return scores;  // one query sees every cached key
  auto mask = torch::ones({t, past + t}, torch::TensorOptions().dtype(torch::kBool).device(scores.device()))
                  .triu(past + 1);
  return scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
}

}  // namespace crucible::policies
