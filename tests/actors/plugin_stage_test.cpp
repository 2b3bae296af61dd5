// A short CPU training run with the example plugin (examples/plugin_stage, build/plugins/source_audit.so)
// loaded from config exactly as `crucible train` loads it, its stage last in the pipeline: the run completes,
// every candidate is scored once, and every stored candidate carries the plugin's mark.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "actors/options/benchmark_section.hpp"
#include "actors/roles.hpp"
#include "messages/envelope.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/plugin_loader.hpp"
#include "runtime/hosting/train_session.hpp"
#include "tests/actors/short_run.hpp"

namespace crucible {
namespace {

namespace fs = std::filesystem;

const std::string example_plugin = std::string(CRUCIBLE_BINARY_DIR) + "/plugins/source_audit.so";

TEST(PluginStage, ATrainingRunSendsEveryCandidateThroughThePluginStage) {
  std::string dir =
      (fs::temp_directory_path() / ("crucible-plugin-stage-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  auto overrides = test::short_run_overrides(dir);
  for (const char* o : {"roles.source_audit=1", "pipeline=[compile, benchmark, verify, source_audit]"})
    overrides.push_back(o);
  overrides.push_back("plugins=[" + example_plugin + "]");
  auto cfg = runtime::parse_config(runtime::embedded_default_config(), overrides, "test");
  ASSERT_TRUE(cfg) << cfg.message();
  cfg->section<actors::benchmark_section>().worker.worker_path =
      std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";

  // What crucible train does: the built-in roles, then the plugins of the config.
  auto registry = std::make_shared<runtime::role_registry>();
  actors::register_builtin_roles(*registry);
  auto loaded = runtime::load_configured_plugins(*cfg, *registry);
  ASSERT_TRUE(loaded) << loaded.message();
  ASSERT_NE(registry->find("source_audit"), nullptr);

  auto s = test::train_to_the_end(*cfg, registry);
  ASSERT_TRUE(s);
  const auto& c = s->conductor;

  auto stored = test::stored_candidates(dir + "/replay.sqlite");
  EXPECT_EQ(static_cast<int64_t>(stored.size()), c.candidates_generated);
  int64_t marked = 0, abandoned = 0;
  for (const auto& sc : stored) {
    if (sc.judged.outcome == "abandoned") {  // stopped before reaching the last stage
      ++abandoned;
      continue;
    }
    bool mark = false;
    for (const auto& e : sc.judged.evidence) mark = mark || e.rfind("source_audit: ", 0) == 0;
    EXPECT_TRUE(mark) << "candidate " << sc.cand.id << " (" << sc.judged.outcome
                      << ") did not go through the plugin's stage";
    marked += mark;
    // The emitted programs call nothing forbidden, so the plugin leaves every verdict as the verifier gave
    // it.
    for (const auto& f : sc.judged.flags) EXPECT_NE(f, "forbidden_call") << sc.cand.id;
  }
  EXPECT_EQ(abandoned, c.candidates_abandoned);
  EXPECT_GT(marked, 0);
  EXPECT_EQ(marked, c.candidates_scored);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible
