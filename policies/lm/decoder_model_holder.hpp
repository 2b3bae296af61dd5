#pragma once
// Internal to policies/: what a decoder_lm holds, for code of this folder that needs the LibTorch module
// (the sampler, the learner). Includes LibTorch: include only from .cpp files.
#include "policies/lm/decoder_model.hpp"

namespace crucible::policies {

struct decoder_model_holder {
  explicit decoder_model_holder(decoder_model m) : model(std::move(m)) {}
  decoder_model model;
};

}  // namespace crucible::policies
