// `crucible train --resume` on a run that already reached its last step: it says so and ends at once,
// rather than waiting for run.max_minutes.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "runtime/storage/checkpoints.hpp"
#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

crucible::test::command_result crucible(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

TEST(TrainResume, ARunThatReachedMaxStepsHasNothingToResume) {
  std::string dir = crucible::test::fresh_temp_dir("resume-done");
  fs::create_directories(dir);
  auto printed = crucible("train --print-config --set run.max_steps=2 --set run.dir=" + dir);
  ASSERT_EQ(printed.exit_code, 0) << printed.out;
  std::ofstream(dir + "/config.yaml") << printed.out;
  crucible::runtime::checkpoint ck;
  ck.step = 2;
  ck.policy_version = 2;
  ASSERT_TRUE(crucible::runtime::save_checkpoint(dir + "/checkpoints", ck));
  auto t0 = std::chrono::steady_clock::now();
  auto r = crucible("train --resume " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("already reached run.max_steps (2) at its checkpoint of step 2; nothing to resume"),
            std::string::npos)
      << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  fs::remove_all(dir);
}

}  // namespace
