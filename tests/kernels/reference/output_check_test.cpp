#include "kernels/reference/output_check.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace crucible::kernels {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const double nan = std::numeric_limits<double>::quiet_NaN();

host_tensor f64(const std::vector<double>& v) {
  host_tensor t("float64", {static_cast<int64_t>(v.size())});
  std::memcpy(t.data(), v.data(), t.bytes());
  return t;
}

host_tensor f32(const std::vector<float>& v) {
  host_tensor t("float32", {static_cast<int64_t>(v.size())});
  std::memcpy(t.data(), v.data(), t.bytes());
  return t;
}

TEST(Poison, EveryDtypeIsPoisonedAndCounted) {
  for (const char* dtype : {"float32", "float16", "bfloat16", "float64", "int32", "int64", "bool"}) {
    SCOPED_TRACE(dtype);
    host_tensor t(dtype, {3, 5});
    std::memset(t.data(), 0, t.bytes());
    EXPECT_EQ(count_poisoned(t), 0);
    poison(t);
    EXPECT_EQ(count_poisoned(t), 15);
    std::memset(t.data(), 0, t.bytes() / 3);  // the first 5 elements written
    EXPECT_EQ(count_poisoned(t), 10);
  }
}

TEST(Poison, IsANaNThatArithmeticDoesNotMake) {
  host_tensor t("float32", {4});
  poison(t);
  EXPECT_TRUE(std::isnan(t.as<float>()[0]));
  host_tensor d("float64", {1});
  poison(d);
  EXPECT_TRUE(std::isnan(d.as<double>()[0]));
  // NaNs computed from numbers are not the poison.
  volatile float zero = 0.0f, big = std::numeric_limits<float>::infinity();
  host_tensor computed = f32({zero / zero, big - big, std::sqrt(-1.0f + zero), std::nanf("")});
  EXPECT_EQ(count_poisoned(computed), 0);
}

TEST(CompareOutputs, ToleranceBoundaryIsInclusive) {
  // atol + rtol * |want| = 0.5 + 0.25 * 1 = 0.75, exact in binary.
  EXPECT_TRUE(compare_outputs(f64({1.75}), f64({1.0}), 0.5, 0.25).ok);
  EXPECT_TRUE(compare_outputs(f64({0.25}), f64({1.0}), 0.5, 0.25).ok);
  const double tiny = std::ldexp(1.0, -50);  // small, yet 1 - (0.25 - tiny) is exact
  EXPECT_FALSE(compare_outputs(f64({1.75 + tiny}), f64({1.0}), 0.5, 0.25).ok);
  EXPECT_FALSE(compare_outputs(f64({0.25 - tiny}), f64({1.0}), 0.5, 0.25).ok);
  // The relative part scales with |want|, not |got|.
  EXPECT_TRUE(compare_outputs(f64({-5.0}), f64({-4.0}), 0.0, 0.25).ok);
  EXPECT_FALSE(compare_outputs(f64({-4.0}), f64({-5.0}), 0.0, 0.19).ok);
}

TEST(CompareOutputs, CountsMismatchesAndErrors) {
  auto c = compare_outputs(f32({1, 2, 3, 4}), f32({1, 2.5f, 3, 2}), 1e-4, 1e-4);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_mismatch, 1);
  EXPECT_EQ(c.numel, 4);
  EXPECT_DOUBLE_EQ(c.max_abs_err, 2.0);
  EXPECT_DOUBLE_EQ(c.max_rel_err, 1.0);
  EXPECT_NE(c.summary().find("2 of 4"), std::string::npos) << c.summary();
  auto same = compare_outputs(f32({1, 2}), f32({1, 2}), 0, 0);
  EXPECT_TRUE(same.ok);
  EXPECT_EQ(same.first_mismatch, -1);
  EXPECT_EQ(same.summary().rfind("ok", 0), 0u);
}

TEST(CompareOutputs, NonFinites) {
  EXPECT_TRUE(compare_outputs(f64({nan, inf, -inf}), f64({nan, inf, -inf}), 1e-4, 1e-4).ok);
  EXPECT_FALSE(compare_outputs(f64({nan}), f64({1.0}), 1e-4, 1e-4).ok);    // NaN where a number is due
  EXPECT_FALSE(compare_outputs(f64({1.0}), f64({nan}), 1e-4, 1e-4).ok);    // a number where NaN is due
  EXPECT_FALSE(compare_outputs(f64({-inf}), f64({inf}), 1e-4, 1e-4).ok);   // sign of inf matters
  EXPECT_FALSE(compare_outputs(f64({1e308}), f64({inf}), 1e300, 1.0).ok);  // finite vs inf never matches
  auto c = compare_outputs(f64({inf}), f64({1.0}), 1e-4, 1e-4);
  EXPECT_FALSE(c.ok);
  EXPECT_TRUE(std::isinf(c.max_abs_err));
}

TEST(CompareOutputs, PoisonedElementsAreMismatches) {
  host_tensor got("float32", {6}), want = f32({1, 2, 3, 4, 5, 6});
  poison(got);
  for (int i = 0; i < 4; ++i) got.as<float>()[i] = want.as<float>()[i];
  auto c = compare_outputs(got, want, 1e-4, 1e-4);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.poisoned, 2);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_mismatch, 4);
  EXPECT_NE(c.summary().find("never written"), std::string::npos) << c.summary();
  // Even where the reference is NaN, an unwritten element is wrong.
  host_tensor p("float32", {1});
  poison(p);
  EXPECT_FALSE(compare_outputs(p, f32({std::nanf("")}), 1e-4, 1e-4).ok);
}

TEST(CompareOutputs, HalfTypesAndIncomparable) {
  host_tensor a("float16", {2}), b("float16", {2});
  const uint16_t one_and_two[] = {0x3c00, 0x4000}, one_and_2p002[] = {0x3c00, 0x4001};  // 2 + 2^-9
  std::memcpy(a.data(), one_and_two, 4);
  std::memcpy(b.data(), one_and_2p002, 4);
  EXPECT_TRUE(compare_outputs(b, a, 1e-2, 1e-2).ok);
  auto tight = compare_outputs(b, a, 0, 1e-4);
  EXPECT_FALSE(tight.ok);
  EXPECT_NEAR(tight.max_abs_err, 1.0 / 512, 1e-12);
  host_tensor bf("bfloat16", {1});
  const uint16_t bf_three = 0x4040;  // 3.0
  std::memcpy(bf.data(), &bf_three, 2);
  host_tensor bf2 = bf.clone();
  EXPECT_TRUE(compare_outputs(bf, bf2, 0, 0).ok);

  auto dtype = compare_outputs(f32({1}), f64({1}), 1, 1);
  EXPECT_FALSE(dtype.ok);
  EXPECT_NE(dtype.summary().find("dtype"), std::string::npos);
  auto shape = compare_outputs(f32({1, 2}), f32({1}), 1, 1);
  EXPECT_FALSE(shape.ok);
  EXPECT_NE(shape.error.find("shape [2]"), std::string::npos) << shape.error;
}

TEST(CompareOutputs, LargeTensorsSpanBlocks) {
  std::vector<float> want(10000, 1.0f), got(10000, 1.0f);
  got[9999] = 2.0f;
  auto c = compare_outputs(f32(got), f32(want), 1e-4, 1e-4);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, 9999);
}

TEST(SameBytes, ComparesBytesShapeAndDtype) {
  host_tensor a = f32({1, 2, 3});
  host_tensor b = a.clone();
  EXPECT_TRUE(same_bytes(a, b));
  b.as<float>()[2] = 3.0001f;
  EXPECT_FALSE(same_bytes(a, b));
  host_tensor c("float32", {3, 1});
  std::memcpy(c.data(), a.data(), a.bytes());
  EXPECT_FALSE(same_bytes(a, c));  // same bytes, other shape
  host_tensor d("int32", {3});
  std::memcpy(d.data(), a.data(), a.bytes());
  EXPECT_FALSE(same_bytes(a, d));
  // NaNs with equal bits are the same bytes (a value comparison would say otherwise).
  host_tensor p("float32", {2}), q("float32", {2});
  poison(p);
  poison(q);
  EXPECT_TRUE(same_bytes(p, q));
}

}  // namespace
}  // namespace crucible::kernels
