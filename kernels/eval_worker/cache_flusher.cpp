#include "kernels/eval_worker/cache_flusher.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>

namespace crucible::kernels {

namespace {

size_t parse_size(const std::string& s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end && (*end == 'K' || *end == 'k')) v <<= 10;
  if (end && (*end == 'M' || *end == 'm')) v <<= 20;
  return static_cast<size_t>(v);
}

}  // namespace

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int i = 0; i < 16; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream size_in(dir + "size");
    if (!size_in) continue;
    std::string size, type;
    size_in >> size;
    std::ifstream(dir + "type") >> type;
    if (type == "Instruction") continue;
    best = std::max(best, parse_size(size));
  }
  return best;
}

cache_flusher::cache_flusher(size_t cap_bytes) {
  size_t llc = last_level_cache_bytes();
  if (llc == 0) llc = size_t{32} << 20;  // unknown: assume a large server LLC rather than too little
  bytes_ = std::min(std::max(llc + llc / 2, size_t{4} << 20), cap_bytes);
  bytes_ = (bytes_ + 4095) / 4096 * 4096;
  buf_ = static_cast<unsigned char*>(std::aligned_alloc(4096, bytes_));
  if (!buf_) throw std::bad_alloc();
  std::fill(buf_, buf_ + bytes_, 0);
}

cache_flusher::~cache_flusher() {
  std::free(buf_);
}

void cache_flusher::flush() {
  // Dirty every line (a read alone could leave lines shared and cheap to drop), then read them back; the
  // sum goes to a volatile so neither pass is optimized away.
  ++round_;
  unsigned char tag = static_cast<unsigned char>(round_);
  for (size_t i = 0; i < bytes_; i += 64) buf_[i] = tag;
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes_; i += 64) sum += buf_[i];
  static volatile uint64_t sink;
  sink = sum;
}

}  // namespace crucible::kernels
