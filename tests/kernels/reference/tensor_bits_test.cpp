#include "kernels/reference/tensor_bits.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace crucible::kernels {
namespace {

// A chunk of 64 bytes: the walk over many chunks, and the last partial one, is what these tests exercise.
constexpr int64_t small_chunk = 64;

TEST(SameBits, AClonesBitsAreTheSameInEveryDtype) {
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble, at::kInt, at::kLong, at::kBool,
                     at::kByte, at::kComplexDouble}) {
    SCOPED_TRACE(c10::toString(dtype));
    at::Tensor a = at::randn({37, 5}).mul(3).to(dtype);
    EXPECT_TRUE(same_bits(a, a.clone(), small_chunk));
    EXPECT_TRUE(same_bits(a, a.clone()));
  }
}

TEST(SameBits, OneChangedElementInTheLastChunkIsFound) {
  at::Tensor a = at::randn({1000});
  at::Tensor b = a.clone();
  b[999] = b[999].item<float>() + 1.0f;
  EXPECT_FALSE(same_bits(a, b, small_chunk));
  EXPECT_FALSE(same_bits(a, b));
  b = a.clone();
  b[0] = -b[0];
  EXPECT_FALSE(same_bits(a, b, small_chunk));
}

TEST(SameBits, NaNsAreEqualWhenTheirBitsAreAndZerosOfOtherSignsAreNot) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  at::Tensor a = at::full({16}, nan);
  EXPECT_TRUE(same_bits(a, a.clone(), small_chunk));  // float == float would call these different
  at::Tensor z = at::zeros({16});
  at::Tensor neg = z.clone();
  neg[3] = -0.0f;
  EXPECT_FALSE(same_bits(z, neg, small_chunk));  // float == float would call these the same
}

TEST(SameBits, ShapeDtypeAndDeviceMustMatch) {
  at::Tensor a = at::arange(12, at::kFloat);
  EXPECT_FALSE(same_bits(a, a.view({3, 4})));
  EXPECT_FALSE(same_bits(a, a.to(at::kDouble)));
  EXPECT_TRUE(same_bits(at::empty({0, 3}), at::empty({0, 3})));
  EXPECT_TRUE(same_bits(at::scalar_tensor(2.5), at::scalar_tensor(2.5)));
  EXPECT_FALSE(same_bits(at::scalar_tensor(2.5), at::scalar_tensor(-2.5)));
}

TEST(SameBits, NonContiguousTensorsAreComparedElementByElement) {
  at::Tensor base = at::randn({40, 30});
  at::Tensor t = base.t();  // a transposed view
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(same_bits(t, t.contiguous(), small_chunk));
  at::Tensor u = t.contiguous();
  u[29][39] = u[29][39].item<float>() * 2 + 1;
  EXPECT_FALSE(same_bits(t, u, small_chunk));
  // Rows larger than a chunk are still walked one row at a time.
  EXPECT_TRUE(same_bits(base.t(), base.t().contiguous(), 8));
}

}  // namespace
}  // namespace crucible::kernels
