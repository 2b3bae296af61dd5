#include "runtime/config/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

expected<config> parse(const std::string& yaml, std::vector<std::string> overrides = {}) {
  return parse_config(yaml, overrides, "test.yaml");
}

void expect_error(const expected<config>& c, const std::string& fragment) {
  ASSERT_FALSE(c) << "accepted a bad config";
  EXPECT_NE(c.message().find(fragment), std::string::npos) << c.message();
}

TEST(Config, EmptyDocumentGivesDefaults) {
  auto c = parse("");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->target, "cpu");
  EXPECT_EQ(c->learner.group_size, 8);
  EXPECT_EQ(c->pipeline, (std::vector<std::string>{"compile", "benchmark", "verify"}));
  EXPECT_EQ(c->roles.at("benchmarker"), 1);
}

TEST(Config, EmbeddedDefaultParsesAndIsTheLocalCpuConfig) {
  auto c = parse_config(embedded_default_config(), {}, "embedded");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->target, "cpu");
  EXPECT_EQ(c->run.dir, "runs/local");
}

TEST(Config, ValuesOverrideDefaults) {
  auto c =
      parse("grpo:\n  lr: 0.0005\n  variant: dapo\nroles:\n  benchmarker: 2\nasync: {max_staleness: 0}\n");
  ASSERT_TRUE(c) << c.message();
  EXPECT_DOUBLE_EQ(*config_number(*c, "grpo.lr"), 5e-4);  // a registered section's key, read by its path
  EXPECT_EQ(c->roles.at("benchmarker"), 2);
  EXPECT_EQ(c->roles.at("compiler"), 2);  // untouched roles keep their default
  EXPECT_EQ(c->async.max_staleness, 0);
}

TEST(Config, UnknownKeysNameTheirPath) {
  expect_error(parse("grpo:\n  lrr: 1\n"), "unknown key 'grpo.lrr'");
  expect_error(parse("nonsense: 3\n"), "unknown key 'nonsense'");
  expect_error(parse("grpo: 3\n"), "'grpo' is a section");
}

TEST(Config, WrongTypesNameThePathAndWhatWasExpected) {
  expect_error(parse("grpo:\n  lr: fast\n"), "grpo.lr: expected a number, got 'fast'");
  expect_error(parse("run:\n  max_steps: [1, 2]\n"), "run.max_steps: expected an integer, got a list");
  expect_error(parse("pipeline: compile\n"), "pipeline: expected a list of strings");
  expect_error(parse("roles:\n  benchmarker: many\n"), "roles.benchmarker: expected an integer count");
  expect_error(parse("run:\n  progress: maybe\n"), "run.progress: expected true or false");
}

// plugin_settings is the one open section: any keys under a role, kept as text, dumped and read back alike.
TEST(Config, PluginSettingsAreOpenPerRoleAndRoundTrip) {
  auto c = parse(
      "plugin_settings:\n  source_audit:\n    forbidden: [system, popen]\n    limits:\n"
      "      lines: 200\n    note: ~\n",
      {"plugin_settings.source_audit.mode=strict"});
  ASSERT_TRUE(c) << c.message();
  const auto& s = c->plugin_settings.at("source_audit");
  EXPECT_EQ(s.at("forbidden"), (std::vector<std::string>{"system", "popen"}));
  EXPECT_EQ(s.at("limits.lines"), std::vector<std::string>{"200"});
  EXPECT_EQ(s.at("mode"), std::vector<std::string>{"strict"});
  EXPECT_TRUE(s.at("note").empty());
  auto again = parse(to_yaml(*c));
  ASSERT_TRUE(again) << again.message() << "\n" << to_yaml(*c);
  EXPECT_EQ(again->plugin_settings, c->plugin_settings);
  expect_error(parse("plugin_settings:\n  source_audit: 3\n"),
               "plugin_settings.source_audit: expected a mapping of setting names to values");
  expect_error(parse("plugin_settings:\n  audit:\n    k: [[1]]\n"),
               "plugin_settings.audit.k[0]: expected a scalar");
  expect_error(parse("plugin_settings: [a]\n"), "plugin_settings: expected a mapping of plugin role");
}

TEST(Config, ValidationExplainsTheBound) {
  expect_error(parse("learner:\n  group_size: 1\n"), "learner.group_size: expected >= 2");
  expect_error(parse("async:\n  max_staleness: -1\n"), "async.max_staleness");
  expect_error(parse("replay:\n  bucket_edges: [1, 0.5]\n"), "strictly increasing");
  expect_error(parse("replay:\n  refine_turns: 9\n"), "replay.refine_turns: expected 0 to 8");
  auto refine = parse("replay:\n  refine_turns: 2\n");
  ASSERT_TRUE(refine) << refine.message();
  EXPECT_EQ(refine->replay.refine_turns, 2);
  expect_error(parse("dispatch:\n  stage_timeout_s: 0\n"), "dispatch.stage_timeout_s: expected > 0");
  expect_error(parse("target: tpu\n"), "target: expected cpu or cuda");
  expect_error(parse("roles:\n  compiler: 100000\n"),
               "roles.compiler: 100000 is above run.max_role_count (256)");
  // Verdicts are made on the head: no node may serve the stages that give them, nor the roles driving the
  // run.
  expect_error(parse("cluster:\n  node_roles:\n    verifier: 1\n"),
               "cluster.node_roles.verifier: verifier gives verdicts, which are made on the head");
  expect_error(parse("cluster:\n  node_roles:\n    judge: 2\n"),
               "cluster.node_roles.judge: judge gives verdicts");
  expect_error(parse("cluster:\n  node_roles:\n    learner: 1\n"),
               "cluster.node_roles.learner: learner runs on the head");
  EXPECT_TRUE(parse("cluster:\n  node_roles:\n    verifier: 0\n    compiler: 1\n"));
  expect_error(parse("cluster:\n  node_roles:\n    benchmarker: 999\n"),
               "cluster.node_roles.benchmarker: 999 is above run.max_role_count (256)");
}

// A key written twice would keep one value silently; an empty file given on purpose is a mistake.
TEST(Config, DuplicateKeysAndEmptyFilesAreErrorsNamingThePath) {
  expect_error(parse("run:\n  max_steps: 5\n  max_steps: 50\n"),
               "test.yaml: key 'run.max_steps' is written twice");
  expect_error(parse("roles:\n  compiler: 1\n  compiler: 4\n"), "key 'roles.compiler' is written twice");
  expect_error(parse("grpo:\n  lr: 1\ngrpo:\n  kl: 0\n"), "key 'grpo' is written twice");
  expect_error(parse("run: [1, 2]\n"), "run");
  const std::string empty =
      (std::filesystem::temp_directory_path() / ("crucible-empty-" + std::to_string(::getpid()) + ".yaml"))
          .string();
  std::ofstream(empty) << "# nothing here\n";
  auto c = load_config(empty, {});
  ASSERT_FALSE(c);
  EXPECT_NE(c.message().find(empty + ": the config file is empty"), std::string::npos) << c.message();
  std::filesystem::remove(empty);
}

TEST(Config, NotYamlIsAnError) {
  expect_error(parse("grpo: [unclosed\n"), "not valid YAML");
}

TEST(Config, SetOverridesApplyOverTheFile) {
  auto c = parse("grpo:\n  lr: 0.01\n",
                 {"grpo.lr=2e-4", "roles.benchmarker=3", "pipeline=[compile, verify]", "run.dir=/tmp/x"});
  ASSERT_TRUE(c) << c.message();
  EXPECT_DOUBLE_EQ(*config_number(*c, "grpo.lr"), 2e-4);
  EXPECT_EQ(c->roles.at("benchmarker"), 3);
  EXPECT_EQ(c->pipeline, (std::vector<std::string>{"compile", "verify"}));
  EXPECT_EQ(c->run.dir, "/tmp/x");
}

TEST(Config, BadOverridesAreErrors) {
  expect_error(parse("", {"grpo.lr"}), "expected key.path=value");
  expect_error(parse("", {"grpo.lrr=1"}), "unknown key 'grpo.lrr'");
  expect_error(parse("grpo:\n  lr: 0.1\n", {"grpo.lr.x=1"}), "'lr' is not a section");
  expect_error(parse("", {"grpo.lr.x=1"}), "unknown key 'grpo.lr.x'");
}

// The judge stage gets a judge unless the file says how many (its keys: tests/actors/options).
TEST(Config, TheJudgeStageGetsAJudge) {
  auto c = parse("");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->roles.count("judge"), 0u) << "no judge unless the pipeline has one";
  auto j = parse("pipeline: [compile, benchmark, verify, judge]\n");
  ASSERT_TRUE(j) << j.message();
  EXPECT_EQ(j->roles.at("judge"), 1) << "the judge stage gets a judge by default";
  auto remote = parse("pipeline: [compile, benchmark, verify, judge]\nroles: {judge: 0}\n");
  ASSERT_TRUE(remote) << remote.message();
  EXPECT_EQ(remote->roles.at("judge"), 0) << "an explicit count wins (nodes serve the stage)";
}

TEST(Config, NumbersReadByPath) {
  auto c = parse("run: {max_steps: 7}\n", {"verifier.penalty=-3"});
  ASSERT_TRUE(c) << c.message();
  EXPECT_DOUBLE_EQ(*config_number(*c, "run.max_steps"), 7.0);
  EXPECT_DOUBLE_EQ(*config_number(*c, "verifier.penalty"), -3.0);
  EXPECT_FALSE(config_number(*c, "run.dir"));
  EXPECT_FALSE(config_number(*c, "verifier.nothing"));
}

TEST(Config, DumpedYamlParsesBackToTheSameConfig) {
  auto c = parse("grpo:\n  lr: 0.0005\nroles:\n  compiler: 1\ntasks:\n  include: [a, b]\n");
  ASSERT_TRUE(c);
  std::string dumped = to_yaml(*c);
  auto back = parse(dumped);
  ASSERT_TRUE(back) << back.message() << "\n" << dumped;
  EXPECT_EQ(to_yaml(*back), dumped);
  EXPECT_EQ(back->tasks.include, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace crucible::runtime

namespace crucible::runtime {
namespace {

TEST(Config, CudaKeysAreValidated) {
  auto c = parse_config("target: cuda\ncuda:\n  arch: sm_80\n  devices: [0, 1]\n");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->cuda.devices, (std::vector<int64_t>{0, 1}));
  auto bad = parse_config("target: cuda\ncuda:\n  devices: [a]\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("cuda.devices[0]: expected an integer"), std::string::npos) << bad.message();
  auto arch = parse_config("cuda:\n  arch: ampere\n");
  ASSERT_FALSE(arch);
  EXPECT_NE(arch.message().find("cuda.arch"), std::string::npos);
  auto none = parse_config("target: cuda\ncuda:\n  devices: []\n");
  ASSERT_FALSE(none);
  auto gpu = parse_config(embedded_gpu_config(), {}, "gpu.yaml");
  ASSERT_TRUE(gpu) << gpu.message();
  EXPECT_EQ(gpu->target, "cuda");
  EXPECT_EQ(gpu->cuda.devices, std::vector<int64_t>{0});
  EXPECT_EQ(gpu->run.max_minutes, 8.0);
}

}  // namespace
}  // namespace crucible::runtime
