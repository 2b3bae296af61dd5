#pragma once
// Internal to policies/: the two steps every causal attention here shares — extending a layer's key/value
// cache with this call's positions, and masking the scores of keys after each query — for the program
// policy's transformer and the decoder LM alike. Includes LibTorch: include only from .cpp files.
#include <cstdint>

#include <torch/torch.h>

namespace crucible::policies {

/// Prepends the cached keys and values (when a cache is given and holds any) to `k` and `v` [B, H, T, D],
/// stores the result back as the cache, and returns how many positions were cached before this call.
int64_t extend_kv_cache(torch::Tensor& k, torch::Tensor& v, torch::Tensor* k_cache, torch::Tensor* v_cache);

/// Scores [.., T, past + T] with -inf where query i (absolute position past + i) would see a later key.
torch::Tensor mask_future_keys(const torch::Tensor& scores, int64_t t, int64_t past);

}  // namespace crucible::policies
