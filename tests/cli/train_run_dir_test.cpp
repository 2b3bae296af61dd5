// A config error found at start leaves the previous run where it was: no run moved aside, no empty run
// directory in its place.

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

crucible::test::command_result crucible(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

// The run directory's parent holds only the run itself afterwards, and the run its own files.
void expect_untouched(const std::string& dir) {
  EXPECT_TRUE(fs::exists(dir + "/metrics.jsonl"));
  EXPECT_FALSE(fs::exists(dir + "/checkpoints")) << "the run directory was prepared anew";
  int entries = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path())) entries += !e.path().empty();
  EXPECT_EQ(entries, 1) << "the previous run was moved aside";
}

TEST(TrainRunDir, ATaskTypoLeavesThePreviousRunInPlace) {
  std::string parent = crucible::test::fresh_temp_dir("run-dir-typo");
  std::string dir = parent + "/run";
  fs::create_directories(dir);
  std::ofstream(dir + "/metrics.jsonl") << "{\"step\": 1, \"reward_mean\": 1.0, \"wall_s\": 1.0}\n";
  auto r = crucible("train --set run.dir=" + dir + " --set tasks.include=[no_such_task]");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("tasks.include: no task named 'no_such_task'"), std::string::npos) << r.out;
  expect_untouched(dir);
  fs::remove_all(parent);
}

TEST(TrainRunDir, APluginThatDoesNotLoadLeavesThePreviousRunInPlace) {
  std::string parent = crucible::test::fresh_temp_dir("run-dir-plugin");
  std::string dir = parent + "/run";
  fs::create_directories(dir);
  std::ofstream(dir + "/metrics.jsonl") << "{\"step\": 1, \"reward_mean\": 1.0, \"wall_s\": 1.0}\n";
  auto r = crucible("train --set run.dir=" + dir + " --set plugins=[" + parent + "/missing.so]");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.so"), std::string::npos) << r.out;
  expect_untouched(dir);
  fs::remove_all(parent);
}

}  // namespace
