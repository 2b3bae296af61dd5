// The one-pass device comparison against the host's compare_outputs on the same values: tolerances, NaN and
// infinities, poison, the first mismatch, sizes that leave a partial block and need the grid to stride, and
// digests that tell outputs apart.
#include "kernels/eval_worker/cuda/output_compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reference/output_check.hpp"

namespace crucible::kernels {
namespace {

constexpr uint32_t poison_bits = 0x7fc0deadu;  // output_check's 4-byte poison
constexpr double atol = 1e-4, rtol = 1e-4;

std::string no_device() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return "no CUDA device";
  cudaSetDevice(0);
  cudaFree(nullptr);  // the primary context, current for the driver API too
  return {};
}

struct device_pair {
  float* got = nullptr;
  float* want = nullptr;
  device_pair(const std::vector<float>& g, const std::vector<float>& w) {
    EXPECT_EQ(cudaMalloc(&got, g.size() * 4 + 4), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&want, w.size() * 4 + 4), cudaSuccess);
    cudaMemcpy(got, g.data(), g.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(want, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
  }
  ~device_pair() {
    cudaFree(got);
    cudaFree(want);
  }
};

host_tensor host_of(const std::vector<float>& v) {
  host_tensor t("float32", {static_cast<int64_t>(v.size())});
  std::memcpy(t.data(), v.data(), v.size() * 4);
  return t;
}

device_comparer::result on_device(const std::vector<float>& g, const std::vector<float>& w) {
  static device_comparer comparer;
  EXPECT_EQ(comparer.error(), "");
  device_pair d(g, w);
  auto r =
      comparer.compare_f32(d.got, d.want, static_cast<int64_t>(g.size()), rtol, atol, poison_bits, nullptr);
  EXPECT_TRUE(r.has_value());
  return r.value_or(device_comparer::result{});
}

float poison_value() {
  float f;
  std::memcpy(&f, &poison_bits, 4);
  return f;
}

std::vector<float> noisy(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void expect_as_host(const std::vector<float>& g, const std::vector<float>& w) {
  const auto dev = on_device(g, w);
  const auto host = compare_outputs(host_of(g), host_of(w), atol, rtol);
  EXPECT_EQ(dev.cmp.ok, host.ok);
  EXPECT_EQ(dev.cmp.mismatches, host.mismatches);
  EXPECT_EQ(dev.cmp.first_mismatch, host.first_mismatch);
  EXPECT_EQ(dev.cmp.poisoned, host.poisoned);
  EXPECT_EQ(dev.cmp.numel, host.numel);
  EXPECT_EQ(dev.cmp.max_abs_err, host.max_abs_err);
  EXPECT_DOUBLE_EQ(dev.cmp.max_rel_err, host.max_rel_err);
}

TEST(DeviceComparer, WithinToleranceAgreesWithTheHost) {
  if (auto why = no_device(); !why.empty()) GTEST_SKIP() << why;
  // 3M + 7 elements: more than one pass of the grid and a partial last block.
  auto w = noisy(3'000'007, 1);
  auto g = w;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> tiny(-5e-5f, 5e-5f);
  for (auto& x : g) x += tiny(rng);
  expect_as_host(g, w);
  EXPECT_TRUE(on_device(g, w).cmp.ok);
  EXPECT_GT(on_device(g, w).cmp.max_abs_err, 0.0);
}

TEST(DeviceComparer, MismatchesNonFinitesAndPoisonAgreeWithTheHost) {
  if (auto why = no_device(); !why.empty()) GTEST_SKIP() << why;
  auto w = noisy(1'000'003, 3);
  auto g = w;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  g[777'777] += 1.0f;                   // out of tolerance, finite
  g[12'345] += 0.5f;                    // the first mismatch
  w[400'000] = nan, g[400'000] = nan;   // NaN on both sides matches
  w[400'001] = inf, g[400'001] = inf;   // the same infinity matches
  w[400'002] = inf, g[400'002] = -inf;  // infinities of opposite sign do not
  g[400'003] = nan;                     // NaN against a number
  g[999'999] = poison_value();          // never written
  expect_as_host(g, w);
  const auto r = on_device(g, w);
  EXPECT_FALSE(r.cmp.ok);
  EXPECT_EQ(r.cmp.first_mismatch, 12'345);
  EXPECT_EQ(r.cmp.poisoned, 1);
  EXPECT_EQ(r.cmp.mismatches, 5);
  EXPECT_TRUE(std::isinf(r.cmp.max_abs_err));
}

TEST(DeviceComparer, AllPoisonedIsNeverRight) {
  if (auto why = no_device(); !why.empty()) GTEST_SKIP() << why;
  auto w = noisy(4099, 4);
  std::vector<float> g(w.size(), poison_value());
  expect_as_host(g, w);
  EXPECT_EQ(on_device(g, w).cmp.poisoned, 4099);
}

TEST(DeviceComparer, DigestsTellOutputsApart) {
  if (auto why = no_device(); !why.empty()) GTEST_SKIP() << why;
  auto w = noisy(65'537, 5);
  auto same = on_device(w, w);
  EXPECT_EQ(same.got_digest, same.want_digest);
  auto g = w;
  std::swap(g[10], g[11]);  // the same words in another order
  auto swapped = on_device(g, w);
  EXPECT_NE(swapped.got_digest, swapped.want_digest);
  EXPECT_EQ(swapped.want_digest, same.want_digest);
  g = w;
  g[65'536] = std::nextafter(g[65'536], 1e9f);  // one bit, in the last element
  EXPECT_NE(on_device(g, w).got_digest, same.want_digest);
}

TEST(DeviceComparer, EmptyOutputIsRight) {
  if (auto why = no_device(); !why.empty()) GTEST_SKIP() << why;
  device_comparer comparer;
  auto r = comparer.compare_f32(nullptr, nullptr, 0, rtol, atol, poison_bits, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->cmp.ok);
}

}  // namespace
}  // namespace crucible::kernels
