#pragma once
// Internal to policies/: what a decoder_lm holds, for code of this folder that needs the LibTorch module
// (the sampler, the learner). Includes LibTorch: include only from .cpp files.
#include <memory>
#include <vector>

#include "policies/lm/decoder_model.hpp"

namespace crucible::policies {

class decode_graph;  // policies/lm/cuda/decode_graph.hpp (CUDA builds)

struct decoder_model_holder {
  explicit decoder_model_holder(decoder_model m) : model(std::move(m)) {}
  decoder_model model;
  /// The sampler's captured decoding steps, newest last (empty without CUDA).
  std::vector<std::shared_ptr<decode_graph>> decode_graphs;
};

}  // namespace crucible::policies
