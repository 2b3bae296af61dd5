#include "kernels/reference/tensor_bits.hpp"

#include <algorithm>

namespace crucible::kernels {

namespace {

// An integer type of the element's width: equality of those is equality of the bits (float == float is
// not: NaN != NaN, -0 == +0). Wider elements (complex128) are compared byte by byte.
c10::ScalarType bits_type(int64_t element_size) {
  switch (element_size) {
    case 2:
      return at::kShort;
    case 4:
      return at::kInt;
    case 8:
      return at::kLong;
    default:
      return at::kByte;
  }
}

}  // namespace

bool same_bits(const at::Tensor& a, const at::Tensor& b, int64_t chunk_bytes) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type() || a.device() != b.device()) return false;
  if (a.numel() == 0) return true;
  const c10::ScalarType as = bits_type(static_cast<int64_t>(a.element_size()));
  // Rows along the first dimension, as many as a chunk holds: a contiguous pair is walked as one row of
  // elements (views, no copy); any other through one chunk's contiguous copy at a time.
  const bool flat = a.is_contiguous() && b.is_contiguous();
  const at::Tensor ra = flat ? a.view({-1}) : (a.dim() == 0 ? a.view({1}) : a);
  const at::Tensor rb = flat ? b.view({-1}) : (b.dim() == 0 ? b.view({1}) : b);
  const int64_t rows = ra.size(0);
  const int64_t row_bytes = std::max<int64_t>(1, ra.numel() / rows * static_cast<int64_t>(a.element_size()));
  const int64_t step = std::max<int64_t>(1, chunk_bytes / row_bytes);
  // One flag on the tensors' device, or'ed chunk by chunk: a single read at the end, not one per chunk.
  at::Tensor differs = at::zeros({}, at::TensorOptions().dtype(at::kBool).device(a.device()));
  for (int64_t r = 0; r < rows; r += step) {
    const int64_t len = std::min(step, rows - r);
    auto bits = [&](const at::Tensor& t) { return t.narrow(0, r, len).contiguous().view(as); };
    differs.logical_or_(at::ne(bits(ra), bits(rb)).any());
  }
  return !differs.item<bool>();
}

}  // namespace crucible::kernels
