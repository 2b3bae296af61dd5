#include "kernels/reference/output_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {
namespace {

constexpr uint64_t poison8 = 0x7ff80000deaddeadULL;
constexpr uint32_t poison4 = 0x7fc0deadU;
constexpr uint16_t poison2 = 0x7fda;
constexpr uint8_t poison1 = 0xa5;

template <class T>
T load(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);  // subnormal
  else if (exp == 31)
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

double bfloat16_to_double(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Elements [begin, begin + n) of `t` as doubles (the dtype dispatched once per block, not per element).
void load_block(const host_tensor& t, int64_t begin, int64_t n, double* out) {
  const auto& d = t.dtype();
  const void* p = t.data();
  if (d == "float32") {
    for (int64_t i = 0; i < n; ++i) out[i] = load<float>(p, begin + i);
  } else if (d == "float64") {
    for (int64_t i = 0; i < n; ++i) out[i] = load<double>(p, begin + i);
  } else if (d == "float16") {
    for (int64_t i = 0; i < n; ++i) out[i] = half_to_double(load<uint16_t>(p, begin + i));
  } else if (d == "bfloat16") {
    for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_to_double(load<uint16_t>(p, begin + i));
  } else if (d == "int32") {
    for (int64_t i = 0; i < n; ++i) out[i] = load<int32_t>(p, begin + i);
  } else if (d == "int64") {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(load<int64_t>(p, begin + i));
  } else if (d == "bool") {
    for (int64_t i = 0; i < n; ++i) out[i] = load<uint8_t>(p, begin + i) != 0;
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<double>::quiet_NaN();
  }
}

/// Marks which of elements [begin, begin + n) of `t` hold the poison pattern.
void poison_block(const host_tensor& t, int64_t begin, int64_t n, bool* out) {
  const void* p = t.data();
  switch (dtype_size(t.dtype())) {
    case 8:
      for (int64_t i = 0; i < n; ++i) out[i] = load<uint64_t>(p, begin + i) == poison8;
      break;
    case 4:
      for (int64_t i = 0; i < n; ++i) out[i] = load<uint32_t>(p, begin + i) == poison4;
      break;
    case 2:
      for (int64_t i = 0; i < n; ++i) out[i] = load<uint16_t>(p, begin + i) == poison2;
      break;
    case 1:
      for (int64_t i = 0; i < n; ++i) out[i] = load<uint8_t>(p, begin + i) == poison1;
      break;
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = false;
  }
}

constexpr int64_t block = 4096;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string output_comparison::summary() const {
  if (!error.empty()) return "not comparable: " + error;
  std::string s = ok ? "ok" : "mismatch";
  if (!ok)
    s += ": " + std::to_string(mismatches) + " of " + std::to_string(numel) +
         " elements outside tolerance (first at " + std::to_string(first_mismatch) + ")";
  s += (ok ? ": " : "; ") + std::string("max abs err ") + fmt(max_abs_err) + ", max rel err " +
       fmt(max_rel_err);
  if (poisoned > 0) s += "; " + std::to_string(poisoned) + " elements never written (still poisoned)";
  return s;
}

void poison(host_tensor& t) {
  poison(t.data(), t.dtype(), t.numel());
}

void poison(void* data, const std::string& dtype, int64_t n) {
  char* p = static_cast<char*>(data);
  switch (dtype_size(dtype)) {
    case 8:
      for (int64_t i = 0; i < n; ++i) std::memcpy(p + 8 * i, &poison8, 8);
      break;
    case 4:
      for (int64_t i = 0; i < n; ++i) std::memcpy(p + 4 * i, &poison4, 4);
      break;
    case 2:
      for (int64_t i = 0; i < n; ++i) std::memcpy(p + 2 * i, &poison2, 2);
      break;
    case 1:
      std::memset(p, poison1, static_cast<size_t>(n));
      break;
  }
}

namespace {
inline uint64_t poison_bits(uint64_t seed, uint64_t i) {  // splitmix64 of (seed, i)
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

// Bytes of one poisoned element. Random bits, mostly finite: poison that looks like data tells a candidate
// nothing (a NaN fill says "checked" as plainly as a fixed pattern). They collide with computed values now
// and then (~0.2 of 2M float elements a call), which poisoned_beyond_chance allows for.
static inline uint64_t random_nan(uint64_t h, int size) {
  switch (size) {
    case 8: {
      uint64_t payload = h & 0x0007ffffffffffffULL;
      return 0x7ff8000000000000ULL | (h & 0x8000000000000000ULL) | (payload ? payload : 1);
    }
    case 4: {
      uint64_t payload = h & 0x003fffffULL;
      return 0x7fc00000ULL | (h & 0x80000000ULL) | (payload ? payload : 1);
    }
    case 2: {  // a NaN in both float16 and bfloat16, never either's default one
      uint64_t payload = h & 0x3fULL;
      return 0x7fc0ULL | (h & 0x8000ULL) | (payload ? payload : 1);
    }
    default:
      return 0xa5;
  }
}

namespace {
inline uint64_t poison_pattern(uint64_t seed, uint64_t i, int size) {
  return size == 1 ? random_nan(0, 1) : poison_bits(seed, i);
}

void poison_random_impl(void* data, int size, int64_t n, uint64_t seed) {
  char* p = static_cast<char*>(data);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = poison_pattern(seed, static_cast<uint64_t>(i), size);
    std::memcpy(p + static_cast<int64_t>(size) * i, &bits, static_cast<size_t>(size));
  }
}
}  // namespace

void poison_random(void* data, const std::string& dtype, int64_t n, uint64_t seed) {
  poison_random_impl(data, dtype_size(dtype), n, seed);
}

int64_t count_poisoned_random(const host_tensor& t, uint64_t seed) {
  const char* p = static_cast<const char*>(t.data());
  const int size = dtype_size(t.dtype());
  int64_t count = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t bits = poison_pattern(seed, static_cast<uint64_t>(i), size);
    count += std::memcmp(p + static_cast<int64_t>(size) * i, &bits, static_cast<size_t>(size)) == 0;
  }
  return count;
}

bool poisoned_beyond_chance(int64_t poisoned, int64_t numel) {
  return poisoned > 4 + numel / 1000000;
}

int64_t count_poisoned(const host_tensor& t) {
  bool flags[block];
  int64_t count = 0;
  for (int64_t b = 0; b < t.numel(); b += block) {
    const int64_t n = std::min(block, t.numel() - b);
    poison_block(t, b, n, flags);
    for (int64_t i = 0; i < n; ++i) count += flags[i];
  }
  return count;
}

output_comparison compare_outputs(const host_tensor& got, const host_tensor& want, double atol, double rtol) {
  output_comparison c;
  if (got.dtype() != want.dtype()) {
    c.error = "dtype " + got.dtype() + ", expected " + want.dtype();
    return c;
  }
  if (got.shape() != want.shape()) {
    c.error = "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
    return c;
  }
  c.numel = got.numel();
  std::vector<double> gb(block), wb(block);
  bool poisoned[block];
  for (int64_t b = 0; b < c.numel; b += block) {
    const int64_t n = std::min(block, c.numel - b);
    load_block(got, b, n, gb.data());
    load_block(want, b, n, wb.data());
    poison_block(got, b, n, poisoned);
    for (int64_t k = 0; k < n; ++k) {
      const double g = gb[k], w = wb[k];
      bool match;
      if (poisoned[k]) {
        ++c.poisoned;
        match = false;
        c.max_abs_err = std::numeric_limits<double>::infinity();
      } else if (std::isnan(w)) {
        match = std::isnan(g);
        if (!match) c.max_abs_err = std::numeric_limits<double>::infinity();
      } else if (std::isinf(w) || !std::isfinite(g)) {
        match = g == w;  // infinities of the same sign; NaN never equals
        if (!match) c.max_abs_err = std::numeric_limits<double>::infinity();
      } else {
        const double err = std::abs(g - w);
        match = err <= atol + rtol * std::abs(w);
        c.max_abs_err = std::max(c.max_abs_err, err);
        if (w != 0) c.max_rel_err = std::max(c.max_rel_err, err / std::abs(w));
      }
      if (!match) {
        if (c.mismatches == 0) c.first_mismatch = b + k;
        ++c.mismatches;
      }
    }
  }
  c.ok = c.mismatches == 0;
  return c;
}

bool same_bytes(const host_tensor& a, const host_tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes() == b.bytes() &&
         (a.bytes() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace crucible::kernels
