// The tasks a run's config names, by name alone: what `crucible report` lists without reading a task.
#include "runtime/config/run_context.hpp"

#include <gtest/gtest.h>

#include "runtime/config/config.hpp"

namespace crucible::runtime {
namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR);

// No KernelBench loader is registered in this test: the names come from the checkout's file names, never
// from running a module (select_tasks would need the loader).
TEST(SelectTaskNames, AKernelBenchCheckoutIsListedByItsFileNames) {
  auto c = parse_config("tasks: {kernelbench_dir: '" + data + "/kernelbench', kernelbench_level: 1}\n");
  ASSERT_TRUE(c) << c.message();
  auto names = select_task_names(*c);
  ASSERT_TRUE(names) << names.message();
  EXPECT_EQ(*names, (std::vector<std::string>{"kb1_1_Small_matmul", "kb1_2_Scaled_relu"}));
  EXPECT_FALSE(select_tasks(*c)) << "reading the tasks needs the loader this test does not register";
  c->tasks.exclude = {"kb1_1_Small_matmul"};
  EXPECT_EQ(*select_task_names(*c), std::vector<std::string>{"kb1_2_Scaled_relu"});
  c->tasks.kernelbench_dir = data + "/tasks";
  auto none = select_task_names(*c);
  ASSERT_FALSE(none);
  EXPECT_NE(none.message().find("tasks.kernelbench_dir:"), std::string::npos) << none.message();
}

// The task suite: the same names select_tasks gives, included and excluded alike.
TEST(SelectTaskNames, TheSuitesNamesAreThoseOfItsTasks) {
  auto c = parse_config("target: cpu\n");
  ASSERT_TRUE(c) << c.message();
  auto tasks = select_tasks(*c);
  auto names = select_task_names(*c);
  ASSERT_TRUE(tasks) << tasks.message();
  ASSERT_TRUE(names) << names.message();
  ASSERT_EQ(names->size(), tasks->size());
  for (size_t i = 0; i < tasks->size(); ++i) EXPECT_EQ((*names)[i], (*tasks)[i].name);
  c->tasks.include = {(*tasks)[0].name};
  EXPECT_EQ(*select_task_names(*c), std::vector<std::string>{(*tasks)[0].name});
}

}  // namespace
}  // namespace crucible::runtime
