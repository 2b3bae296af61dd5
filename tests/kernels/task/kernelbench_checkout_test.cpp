#include "kernels/task/kernelbench_checkout.hpp"

#include <gtest/gtest.h>

namespace crucible::kernels {
namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";
const std::string problems = data + "/KernelBench";

// The checkout's layout (or its KernelBench/ folder), by level then id; other files skipped.
TEST(KernelBenchSuite, FindsTheProblemsOfEachLevel) {
  for (const auto& root : {data, problems}) {
    auto all = scan_kernelbench(root);
    ASSERT_TRUE(all) << all.message();
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ((*all)[0].task_name(), "kb1_1_Small_matmul");
    EXPECT_EQ((*all)[1].task_name(), "kb1_2_Scaled_relu");
    EXPECT_EQ((*all)[2].task_name(), "kb2_7_Linear_gelu");
  }
  auto two = scan_kernelbench(data, 2);
  ASSERT_TRUE(two);
  ASSERT_EQ(two->size(), 1u);
  EXPECT_EQ((*two)[0].level, 2);
  EXPECT_EQ((*two)[0].id, 7);
  EXPECT_FALSE(scan_kernelbench(data, 5));
  auto none = scan_kernelbench(std::string(CRUCIBLE_TEST_DATA_DIR) + "/tasks");
  ASSERT_FALSE(none);
  EXPECT_NE(none.message().find("no KernelBench level folder"), std::string::npos);
}

}  // namespace
}  // namespace crucible::kernels
