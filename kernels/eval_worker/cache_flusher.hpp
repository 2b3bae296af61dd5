#pragma once
// Evicts the CPU caches before a timed call, so neither side is measured on data the other (or the previous
// trial) left warm. The buffer is sized from the last-level cache the kernel reports (sysfs), with headroom
// because LLC replacement is not strict LRU, and capped so a flush stays a few milliseconds.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace crucible::kernels {

/// Bytes of the largest data or unified cache of cpu0 (/sys/devices/system/cpu/cpu0/cache/index*/size);
/// 0 when sysfs does not say.
size_t last_level_cache_bytes();

class cache_flusher {
 public:
  /// A flush buffer of max(1.5 x LLC, 4 MiB), at most `cap_bytes`. Not thread-safe (one per worker).
  explicit cache_flusher(size_t cap_bytes = size_t{128} << 20);
  ~cache_flusher();
  cache_flusher(const cache_flusher&) = delete;
  cache_flusher& operator=(const cache_flusher&) = delete;

  /// Writes then reads every cache line of the buffer.
  void flush();
  size_t bytes() const { return bytes_; }

 private:
  unsigned char* buf_ = nullptr;
  size_t bytes_ = 0;
  uint64_t round_ = 0;
};

}  // namespace crucible::kernels
