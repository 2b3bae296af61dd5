#pragma once
// For the learners' tests: copy one decoder LM's weights into another of the same configuration, and compare
// two models by their logits on a probe sequence. Includes LibTorch (the test target precompiles it).
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "policies/lm/decoder_lm.hpp"
#include "policies/lm/decoder_model_holder.hpp"

namespace crucible::policies::testing {

inline void copy_weights(decoder_lm& from, decoder_lm& to) {
  torch::NoGradGuard no_grad;
  auto src = from.model().model->named_parameters(true);
  for (auto& kv : to.model().model->named_parameters(true)) kv.value().copy_(src[kv.key()]);
}

/// Largest |logit difference| of the two models after each position of `probe`.
inline double max_logit_diff(decoder_lm& a, decoder_lm& b, const std::vector<int64_t>& probe) {
  auto la = a.logits(probe), lb = b.logits(probe);
  EXPECT_TRUE(la && lb);
  if (!la || !lb) return 1e30;
  double d = 0;
  for (size_t i = 0; i < la->size(); ++i)
    d = std::max(d, static_cast<double>(std::fabs((*la)[i] - (*lb)[i])));
  return d;
}

}  // namespace crucible::policies::testing
