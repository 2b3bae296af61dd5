// `crucible train` with plugins, as a user runs it: the example config of examples/plugin_stage trains with
// the plugin's stage, and a plugin that cannot be loaded ends the command with exit code 2 and a message.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

// stdout and stderr together
crucible::test::command_result crucible(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

using crucible::test::fresh_temp_dir;

TEST(TrainPlugins, AMissingPluginEndsTrainWithExitCode2) {
  std::string dir = fresh_temp_dir("missing-plugin");
  auto r = crucible("train --set run.dir=" + dir + " --set plugins=[/nonexistent/audit.so]");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("crucible train: plugins[0] (/nonexistent/audit.so): no such file"), std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

TEST(TrainPlugins, ALibraryThatIsNoPluginEndsTrainWithExitCode2) {
  std::string lib = std::string(CRUCIBLE_BINARY_DIR) + "/tests/plugins/no_entry.so";
  if (!fs::exists(lib)) GTEST_SKIP() << lib << " is built with test_runtime_hosting";
  std::string dir = fresh_temp_dir("not-a-plugin");
  auto r = crucible("train --set run.dir=" + dir + " --set plugins=[" + lib + "]");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("exports no Crucible entry point"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(TrainPlugins, TheExampleConfigTrainsWithThePluginStage) {
  std::string dir = fresh_temp_dir("plugin-train");
  std::string config = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../examples/plugin_stage/source_audit.yaml";
  auto r =
      crucible("train --config " + config + " --set plugins=[" + std::string(CRUCIBLE_BINARY_DIR) +
               "/plugins/source_audit.so] --set run.dir=" + dir +
               " --set run.max_steps=1 --set run.progress=false --set tasks.include=[bias_gelu]"
               " --set learner.group_size=4 --set learner.groups_per_step=1 --set async.groups_in_flight=1"
               " --set benchmark.seeds=2 --set benchmark.input_sets=2 --set benchmark.warmup=1"
               " --set benchmark.buckets=2 --set benchmark.trials=1 --set policy.d_model=32"
               " --set policy.layers=1 --set policy.heads=2");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("done after 1 learner steps"), std::string::npos) << r.out;
  std::ifstream log(dir + "/crucible.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("source_audit.so: registered source_audit"), std::string::npos) << text.str();
  std::ifstream cfg(dir + "/config.yaml");
  std::stringstream cfg_text;
  cfg_text << cfg.rdbuf();
  EXPECT_NE(cfg_text.str().find("source_audit"), std::string::npos) << "the run's config records the stage";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
