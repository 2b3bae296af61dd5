#pragma once
// Bit-for-bit equality of two tensors' memory, with temporaries of a bounded size: at::equal allocates a
// bool per element of its operands (on a byte view, as much again as the tensor), which on an 8 GiB output
// or a 4 GiB weight matrix is memory the evaluation's plan never counted. Includes ATen: include only from
// .cpp files.
#include <cstdint>

#include <ATen/ATen.h>

namespace crucible::kernels {

/// The chunk the comparison walks in: its temporaries stay below this many bytes.
constexpr int64_t bits_chunk_bytes = int64_t{64} << 20;

/// Whether `a` and `b` hold the same bytes in the same shape and dtype (NaNs equal when their bits are: a
/// tensor nobody wrote is bit-identical to its clone). Non-contiguous tensors are compared element by element
/// through contiguous copies of one chunk at a time.
bool same_bits(const at::Tensor& a, const at::Tensor& b, int64_t chunk_bytes = bits_chunk_bytes);

}  // namespace crucible::kernels
