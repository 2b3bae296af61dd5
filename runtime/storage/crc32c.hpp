#pragma once
// CRC-32C (Castagnoli, the polynomial 0x1EDC6F41 reflected), as TensorBoard's record framing uses it.
#include <cstddef>
#include <cstdint>

namespace crucible::runtime {

/// The CRC-32C of `size` bytes at `data`, continuing from `crc` (0 to start).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

/// TFRecord's masked form: a CRC stored beside the data it covers would otherwise be easy to confuse with
/// data (rotate right by 15, add a constant).
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace crucible::runtime
