// corpus: label=honest class=one_time_init task=log_softmax_bias target=cpu
// what: log_softmax(x + b) over rows (max-shifted, sum in double); a function-local static initialised by a lambda holds the row-independent constants, which looks like remembered state but is computed once from nothing.
#include <crucible_abi.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace {

struct constants {
  float neg_inf;
  double ln2;
};

const constants& get_constants() {
  static const constants k = [] {
    constants c;
    c.neg_inf = -std::numeric_limits<float>::infinity();
    c.ln2 = std::log(2.0);
    return c;
  }();
  return k;
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const constants& k = get_constants();
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* o = out + r * cols;
    float m = k.neg_inf;
    for (int64_t j = 0; j < cols; ++j) {
      o[j] = xr[j] + b[j];  // the biased logit, kept in the output row
      m = o[j] > m ? o[j] : m;
    }
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(o[j]) - m);
    // log(s) via log2 for no reason beyond using the constant: log(s) = log2(s) * ln2
    const double lse = m + std::log2(s) * k.ln2;
    for (int64_t j = 0; j < cols; ++j) o[j] = static_cast<float>(static_cast<double>(o[j]) - lse);
  }
  return 0;
}
