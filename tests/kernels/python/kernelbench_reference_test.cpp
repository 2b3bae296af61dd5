#include "kernels/python/kernelbench_reference.hpp"

#include <gtest/gtest.h>

#include "kernels/python/kernelbench_candidate.hpp"

namespace crucible::kernels {
namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";

// The fingerprint of what the reference computes with, compared bit for bit (kernels/reference/
// tensor_bits.hpp): nothing changes while nothing writes, and a module sharing the interpreter that
// halves the reference's weights (a hack the CUDA worker must see) is said by name.
TEST(KernelBenchReference, WeightsAnotherModuleWritesAreSaidByName) {
  auto task = kernelbench_task(data + "/KernelBench/level2/7_Linear_gelu.py", "kb2_7_Linear_gelu");
  ASSERT_TRUE(task) << task.message();
  auto ref = kernelbench_reference::create(*task);
  ASSERT_TRUE(ref) << ref.message();
  EXPECT_EQ((*ref)->changes(), "");  // before watch(): nothing to compare with
  ASSERT_EQ((*ref)->watch(), "");
  EXPECT_EQ((*ref)->changes(), "");
  auto honest = kernelbench_candidate::load(data + "/candidates/linear_gelu_correct.py", *task, -1);
  ASSERT_TRUE(honest) << honest.message();
  EXPECT_EQ((*ref)->changes(), "");  // an honest module beside it, loaded or not, changes nothing
  auto hack = kernelbench_candidate::load(data + "/candidates/cuda/linear_gelu_halves_reference_weights.py",
                                          *task, -1);
  ASSERT_TRUE(hack) << hack.message();
  EXPECT_EQ((*ref)->changes(), "the values of the model's 'linear.weight' changed");
}

}  // namespace
}  // namespace crucible::kernels
