// The figures over tasks: fast_p counts only correct tasks faster than p, over every task; the means over the
// correct ones, and over all with 1x where none is correct.
#include "kernels/eval/speedup_metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace crucible::kernels {
namespace {

TEST(SpeedupMetrics, FastPCountsCorrectTasksAboveEachThresholdOverEveryTask) {
  auto s = summarize_speedups({2.0, 0.5, std::nullopt, 1.2, 4.0});
  EXPECT_EQ(s.tasks, 5u);
  EXPECT_EQ(s.correct, 4u);
  ASSERT_EQ(s.fast.size(), 4u);
  EXPECT_EQ(s.fast[0].tasks, 4u);  // fast_0: the correct rate
  EXPECT_DOUBLE_EQ(s.fast[0].share, 0.8);
  EXPECT_EQ(s.fast[1].tasks, 3u);  // > 1
  EXPECT_EQ(s.fast[2].tasks, 2u);  // > 1.5
  EXPECT_EQ(s.fast[3].tasks, 1u);  // > 2: 2.0 itself is not faster than 2
  EXPECT_EQ(format_fast_p(s), "fast_0 0.80 (4/5), fast_1 0.60 (3/5), fast_1.5 0.40 (2/5), fast_2 0.20 (1/5)");
}

TEST(SpeedupMetrics, MeansOverTheCorrectAndOverAllWithOneWhereNone) {
  auto s = summarize_speedups({2.0, 0.5, std::nullopt, 8.0});
  EXPECT_DOUBLE_EQ(s.mean, 3.5);
  EXPECT_DOUBLE_EQ(s.median, 2.0);
  EXPECT_NEAR(s.geomean, 2.0, 1e-12);  // (2 * 0.5 * 8)^(1/3)
  EXPECT_DOUBLE_EQ(s.mean_all, 11.5 / 4);
  EXPECT_DOUBLE_EQ(s.median_all, 1.5);
  EXPECT_NEAR(s.geomean_all, std::pow(8.0, 0.25), 1e-12);
}

TEST(SpeedupMetrics, NothingCorrectIsZerosNotNaN) {
  auto s = summarize_speedups({std::nullopt, std::nullopt});
  EXPECT_EQ(s.correct, 0u);
  EXPECT_EQ(s.mean, 0.0);
  EXPECT_EQ(s.geomean, 0.0);
  EXPECT_DOUBLE_EQ(s.geomean_all, 1.0);
  EXPECT_EQ(summarize_speedups({}).fast[0].share, 0.0);
}

}  // namespace
}  // namespace crucible::kernels
