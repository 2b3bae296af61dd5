// Whether a run can start, before anything starts: roles and the pipeline.
#include "runtime/config/run_checks.hpp"

#include <gtest/gtest.h>

#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::runtime {
namespace {

config with(const std::vector<std::string>& overrides) {
  auto c = parse_config(embedded_default_config(), overrides, "embedded configs/local.yaml");
  EXPECT_TRUE(c) << c.message();
  return *c;
}

std::string why(const config& c, const role_registry* r = nullptr) {
  auto st = check_run_plan(c, r);
  return st ? "" : st.message();
}

TEST(RunChecks, TheDefaultConfigCanStart) {
  EXPECT_EQ(why(with({})), "");
}

TEST(RunChecks, ThePipelineKeepsItsBuiltInStagesInOrderOnceEach) {
  EXPECT_NE(why(with({"pipeline=[compile, verify, benchmark]"})).find("'verify' comes before 'benchmark'"),
            std::string::npos);
  EXPECT_NE(why(with({"pipeline=[benchmark, compile, verify]"})).find("'benchmark' comes before 'compile'"),
            std::string::npos)
      << why(with({"pipeline=[benchmark, compile, verify]"}));
  EXPECT_NE(why(with({"pipeline=[compile, verify]"})).find("stage 'benchmark' is missing"),
            std::string::npos);
  EXPECT_NE(why(with({"pipeline=[compile, benchmark, verify, verify]"})).find("'verify' is listed twice"),
            std::string::npos);
  // A custom stage may sit anywhere; its role must have a count (here: none, and no cluster).
  EXPECT_NE(
      why(with({"pipeline=[compile, benchmark, verify, audit]"})).find("stage 'audit' needs at least one"),
      std::string::npos);
  EXPECT_EQ(why(with({"pipeline=[compile, benchmark, verify, audit]", "roles.audit=1"})), "");
}

TEST(RunChecks, SingletonRolesAreExactlyOne) {
  EXPECT_NE(why(with({"roles.learner=0"})).find("roles.learner: expected >= 1"), std::string::npos);
  EXPECT_NE(why(with({"roles.replay_buffer=2"})).find("roles.replay_buffer: exactly 1"), std::string::npos);
  EXPECT_NE(why(with({"roles.generator=0"})).find("roles.generator: expected >= 1"), std::string::npos);
}

TEST(RunChecks, WithAClusterNodesMayServeTheStagesButNotTheVerdicts) {
  EXPECT_EQ(why(with({"roles.benchmarker=0", "cluster.listen=tcp://127.0.0.1:5555"})), "");
  EXPECT_NE(why(with({"roles.benchmarker=0"})).find("there is no cluster to serve it"), std::string::npos);
  EXPECT_NE(why(with({"roles.verifier=0", "cluster.listen=tcp://127.0.0.1:5555"}))
                .find("its verdicts are made on the head: no node may serve it"),
            std::string::npos);
}

TEST(RunChecks, AHeadWithoutKeysMayNotListenOnAnotherInterface) {
  EXPECT_NE(why(with({"cluster.listen=tcp://10.0.0.7:5555"})).find("without CURVE keys"), std::string::npos);
  EXPECT_EQ(why(with({"cluster.listen=tcp://10.0.0.7:5555", "cluster.plaintext_remote=true"})), "");
  EXPECT_EQ(why(with({"cluster.listen=tcp://*:5555"})), "");  // narrowed to loopback at start
}

TEST(RunChecks, RolesWithACountMustBeKnownOnceTheRegistryIs) {
  role_registry registry;  // no roles at all: every role with a count is unknown
  EXPECT_NE(why(with({}), &registry).find("no such role"), std::string::npos);
  // Settings for a role nothing registered: a typo caught before the run starts.
  role_registry all;
  for (const auto& [role, n] : with({}).roles)
    all.add(role, [](caf::actor_system&, const role_context&) { return caf::actor{}; });
  EXPECT_EQ(why(with({}), &all), "");
  EXPECT_NE(
      why(with({"plugin_settings.source_adit.k=1"}), &all).find("plugin_settings.source_adit: no such role"),
      std::string::npos);
}

}  // namespace
}  // namespace crucible::runtime
