// The domain's config sections (actors/options): their defaults, checks and the values that follow from
// the target, read through the runtime's config by type.
#include <algorithm>

#include <gtest/gtest.h>

#include "actors/options/benchmark_section.hpp"
#include "actors/options/compiler_section.hpp"
#include "actors/options/evaluation_config_of.hpp"
#include "actors/options/generator_section.hpp"
#include "actors/options/grpo_section.hpp"
#include "actors/options/judge_section.hpp"
#include "actors/options/policy_section.hpp"
#include "actors/options/self_supervised_section.hpp"
#include "actors/options/sft_section.hpp"
#include "actors/options/verifier_section.hpp"
#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

expected<runtime::config> parse(const std::string& yaml, std::vector<std::string> overrides = {}) {
  return runtime::parse_config(yaml, overrides, "test.yaml");
}

void expect_error(const expected<runtime::config>& c, const std::string& fragment) {
  ASSERT_FALSE(c) << "accepted a bad config";
  EXPECT_NE(c.message().find(fragment), std::string::npos) << c.message();
}

TEST(Sections, DefaultsAreTheSectionTypesDefaults) {
  auto c = parse("");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->section<compiler_section>().cxx, "g++");
  EXPECT_EQ(c->section<compiler_section>().target, "cpu");
  EXPECT_EQ(c->section<policy_section>().target, "cpu");
  EXPECT_EQ(c->section<policy_section>().threads, 1);
  EXPECT_DOUBLE_EQ(c->section<grpo_section>().lr, policies::grpo_config{}.lr);
  EXPECT_DOUBLE_EQ(c->section<generator_section>().temperature, 1.0);
  EXPECT_DOUBLE_EQ(c->section<verifier_section>().penalty, -1.0);
  EXPECT_EQ(c->section<benchmark_section>().eval.seeds, eval_options{}.seeds);
}

TEST(Sections, ValuesAndOverridesReachTheirSection) {
  auto c = parse("grpo:\n  lr: 0.0005\n  variant: dapo\npolicy: {d_model: 32, threads: 2}\n",
                 {"generator.temperature=0.7", "verifier.penalty=-2", "compiler.timeout_s=9"});
  ASSERT_TRUE(c) << c.message();
  EXPECT_DOUBLE_EQ(c->section<grpo_section>().lr, 5e-4);
  EXPECT_EQ(c->section<grpo_section>().variant, "dapo");
  EXPECT_EQ(c->section<policy_section>().d_model, 32);
  EXPECT_EQ(c->section<policy_section>().threads, 2);
  EXPECT_DOUBLE_EQ(c->section<generator_section>().temperature, 0.7);
  EXPECT_DOUBLE_EQ(c->section<verifier_section>().penalty, -2.0);
  EXPECT_DOUBLE_EQ(c->section<compiler_section>().timeout_s, 9.0);
  auto ec = evaluation_config_of(*c);
  EXPECT_DOUBLE_EQ(ec.compiler.timeout_s, 9.0);
  EXPECT_DOUBLE_EQ(ec.judge.penalty, -2.0);
}

TEST(Sections, ThePolicyKindAndTheStagesSettingsAreRead) {
  auto c = parse(
      "stages: [sft, self_supervised, contrastive]\npolicy:\n  kind: lm\n  lm: {device: cpu, max_context: "
      "1024, "
      "max_new_tokens: 256, dtype: bf16}\nsft:\n  vocab_size: 512\n  model: {hidden_size: 64, heads: 4, "
      "kv_heads: 2}\nself_supervised: {plateau_steps: 5}\n",
      {"policy.remote.framing=chatml"});
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->stages, (std::vector<std::string>{"sft", "self_supervised", "contrastive"}));
  const auto& p = c->section<policy_section>();
  EXPECT_EQ(p.kind, "lm");
  EXPECT_EQ(p.lm.max_context, 1024);
  EXPECT_EQ(p.lm.max_new_tokens, 256);
  EXPECT_EQ(p.lm.dtype, "bf16");
  EXPECT_EQ(p.remote.framing, "chatml");
  EXPECT_EQ(c->section<sft_section>().vocab_size, 512);
  EXPECT_EQ(c->section<sft_section>().hidden_size, 64);
  EXPECT_EQ(c->section<self_supervised_section>().plateau_steps, 5);
  expect_error(parse("policy: {kind: gpt}"), "policy.kind: expected program, lm or remote");
  expect_error(parse("policy: {lm: {max_context: 100, max_new_tokens: 100}}"), "policy.lm.max_context");
  expect_error(parse("policy: {lm: {dtype: f8}}"), "policy.lm.dtype");
  expect_error(parse("policy: {kind: remote, remote: {url: 'ftp://x'}}"), "policy.remote.url");
  expect_error(parse("policy: {remote: {api_key_env: CRUCIBLE_TEST_NO_SUCH_VARIABLE}}"), "is not set");
  expect_error(parse("stages: [contrastive, sft]"), "must come before");
  expect_error(parse("stages: [ppo]"), "unknown stage 'ppo'");
  expect_error(parse("sft: {model: {hidden_size: 60, heads: 8}}"), "sft.model");
  EXPECT_EQ(c->section<sft_section>().corpus_policy, "program");
  expect_error(parse("sft: {corpus_policy: gpt}"), "sft.corpus_policy: expected program, remote or none");
  expect_error(parse("stages: [sft]\npolicy: {kind: remote}"), "set policy.kind to lm");
  expect_error(parse("stages: [sft]\npolicy: {kind: lm}\nsft: {corpus_policy: none}"), "give sft.jsonl");
  expect_error(parse("stages: [sft]\npolicy: {kind: lm, remote: {url: ''}}\nsft: {corpus_policy: remote}"),
               "sft.corpus_policy: remote samples the model at policy.remote.url");
  EXPECT_TRUE(parse("stages: [sft]\npolicy: {kind: lm}\nsft: {corpus_policy: none, jsonl: corpus.jsonl}"));
  expect_error(parse("self_supervised: {plateau_steps: 0}"), "self_supervised.plateau_steps");
}

TEST(Sections, EachSectionValidatesItsKeys) {
  expect_error(parse("grpo:\n  variant: ppo\n"), "grpo.variant: expected grpo, dr_grpo or dapo");
  expect_error(parse("grpo: {clip: 1.5}"), "grpo.clip: expected in (0, 1)");
  expect_error(parse("policy: {d_model: 30, heads: 4}"), "policy.d_model: expected >= 8 and divisible");
  expect_error(parse("policy: {threads: 0}"), "policy.threads: expected >= 1");
  expect_error(parse("generator: {temperature: 0}"), "generator.temperature: expected > 0");
  expect_error(parse("compiler: {memory_mb: 10}"), "compiler.memory_mb: expected >= 256");
  expect_error(parse("benchmark: {seeds: 1}"), "benchmark.seeds: expected >= 2");
  expect_error(parse("benchmark: {checked_share: 0}"), "benchmark.checked_share");
  expect_error(parse("benchmark: {timeout_s: 500}"),
               "dispatch.stage_timeout_s: expected more than benchmark.timeout_s");
  expect_error(parse("verifier: {penalty: low}"), "verifier.penalty: expected a number, got 'low'");
  expect_error(parse("verifier: {strict: true}"), "unknown key 'verifier.strict'");
}

TEST(Sections, JudgeSectionDefaultsAndValidation) {
  auto c = parse("");
  ASSERT_TRUE(c) << c.message();
  const auto& judge = c->section<judge_section>();
  EXPECT_DOUBLE_EQ(judge.review_speedup, 3.0);
  EXPECT_DOUBLE_EQ(judge.review_peak_fraction, 0.8);
  EXPECT_TRUE(judge.review_static);
  EXPECT_DOUBLE_EQ(judge.case_similarity, 0.9);
  EXPECT_EQ(judge.reviewer, "rules");
  auto j =
      parse("pipeline: [compile, benchmark, verify, judge]\njudge:\n  review_speedup: 2\n  cases_k: 5\n");
  ASSERT_TRUE(j) << j.message();
  EXPECT_DOUBLE_EQ(j->section<judge_section>().review_speedup, 2.0);
  EXPECT_EQ(j->section<judge_section>().cases_k, 5);

  expect_error(parse("judge: {reviewer: lm}"), "judge.reviewer: 'lm' is not available yet");
  expect_error(parse("judge: {reviewer: remote}"), "judge.reviewer: 'remote' is not available yet");
  expect_error(parse("judge: {reviewer: oracle}"), "judge.reviewer: expected rules");
  expect_error(parse("judge: {case_similarity: 1.5}"),
               "judge.case_similarity: expected a similarity in (0, 1]");
  expect_error(parse("judge: {review_speedup: -1}"), "judge.review_speedup: expected >= 0");
  expect_error(parse("judge: {cases_k: 0}"), "judge.cases_k: expected >= 1");
  expect_error(parse("judge: {review_static: maybe}"), "judge.review_static: expected true or false");
  expect_error(parse("pipeline: [compile, benchmark, verify, judge]\njudge: {cases_dir: /no/such/dir}\n"),
               "judge.cases_dir: '/no/such/dir' is not a directory");
  expect_error(parse("judge: {threshold: 2}"), "unknown key 'judge.threshold'");
}

// target: cuda swaps in nvcc's defaults for the compiler keys the file leaves out, lifts the worker's
// address-space limit, and the policy decodes CUDA programs.
TEST(Sections, GpuConfigIsTheCudaTarget) {
  auto c = runtime::parse_config(runtime::embedded_gpu_config(), {}, "gpu.yaml");
  ASSERT_TRUE(c) << c.message();
  const auto& compiler = c->section<compiler_section>();
  const auto& bench = c->section<benchmark_section>();
  EXPECT_EQ(c->section<policy_section>().target, "cuda");
  EXPECT_EQ(compiler.target, "cuda");
  EXPECT_NE(compiler.cxx.find("nvcc"), std::string::npos);
  EXPECT_NE(std::find(compiler.flags.begin(), compiler.flags.end(), "-arch=sm_90"), compiler.flags.end());
  EXPECT_EQ(bench.worker.memory_mb, 0);
  EXPECT_TRUE(bench.worker.standby);       // an outlier's fresh worker is already loaded
  EXPECT_TRUE(bench.worker.fork_modules);  // a KernelBench candidate in a child, not a fresh worker
  EXPECT_FALSE(bench.eval.time_launch);    // gated launches: events time the device's work
}

// A standby worker loads beside the one measuring: on the CPU target it would compete for the cores timed.
TEST(Sections, AStandbyWorkerOnlyWhereItCannotDisturbTheMeasurement) {
  auto cpu = parse("");
  ASSERT_TRUE(cpu) << cpu.message();
  EXPECT_FALSE(cpu->section<benchmark_section>().worker.standby);
  auto off = parse("target: cuda\nbenchmark:\n  standby_worker: false\n");
  ASSERT_TRUE(off) << off.message();
  EXPECT_FALSE(off->section<benchmark_section>().worker.standby);
  expect_error(parse("benchmark:\n  standby_worker: 2\n"), "benchmark.standby_worker");
}

// KernelBench modules in forked children on the CUDA target (each would otherwise need a fresh worker); on
// the CPU target the worker keeps its reference cache across candidates instead. Either can be set.
TEST(Sections, ModulesAreForkedOnTheCudaTargetUnlessTheFileSaysOtherwise) {
  auto cpu = parse("");
  ASSERT_TRUE(cpu) << cpu.message();
  EXPECT_FALSE(cpu->section<benchmark_section>().worker.fork_modules);
  auto cuda = parse("target: cuda\n");
  ASSERT_TRUE(cuda) << cuda.message();
  EXPECT_TRUE(cuda->section<benchmark_section>().worker.fork_modules);
  auto off = parse("target: cuda\nbenchmark:\n  fork_modules: false\n");
  ASSERT_TRUE(off) << off.message();
  EXPECT_FALSE(off->section<benchmark_section>().worker.fork_modules);
  auto on = parse("benchmark:\n  fork_modules: true\n");
  ASSERT_TRUE(on) << on.message();
  EXPECT_TRUE(on->section<benchmark_section>().worker.fork_modules);
  expect_error(parse("benchmark:\n  fork_modules: sometimes\n"), "benchmark.fork_modules");
}

TEST(Sections, TimingProtocolKeys) {
  auto c = parse("benchmark:\n  time_launch: true\n  warmup: 0\n  warmup_ms: 25\n");
  ASSERT_TRUE(c) << c.message();
  const auto& eval = c->section<benchmark_section>().eval;
  EXPECT_TRUE(eval.time_launch);
  EXPECT_EQ(eval.warmup, 0);
  EXPECT_DOUBLE_EQ(eval.warmup_ms, 25.0);
  expect_error(parse("benchmark:\n  warmup_ms: -1\n"),
               "benchmark.warmup and benchmark.warmup_ms: expected >= 0");
  expect_error(parse("benchmark:\n  time_launch: 3\n"), "benchmark.time_launch");
  EXPECT_TRUE(eval.charge_reference_tails);  // baseline calls pay their short tails too, unless turned off
  auto tails = parse("benchmark:\n  charge_reference_tails: false\n");
  ASSERT_TRUE(tails) << tails.message();
  EXPECT_FALSE(tails->section<benchmark_section>().eval.charge_reference_tails);
  EXPECT_FALSE(eval.bucket_charge_cap);  // the cap per call until the cap per bucket is measured on a device
  auto bucket = parse("benchmark:\n  bucket_charge_cap: true\n");
  ASSERT_TRUE(bucket) << bucket.message();
  EXPECT_TRUE(bucket->section<benchmark_section>().eval.bucket_charge_cap);
  expect_error(parse("benchmark:\n  bucket_charge_cap: 2\n"), "benchmark.bucket_charge_cap");
  EXPECT_FALSE(eval.lead_region);  // the candidate's calls as before until the lead region is measured
  auto lead = parse("benchmark:\n  lead_region: true\n");
  ASSERT_TRUE(lead) << lead.message();
  EXPECT_TRUE(lead->section<benchmark_section>().eval.lead_region);
  expect_error(parse("benchmark:\n  lead_region: maybe\n"), "benchmark.lead_region");
}

TEST(Sections, ExplicitCompilerKeysWinOverTheCudaDefaults) {
  auto c = parse("target: cuda\ncompiler:\n  cxx: /opt/my/nvcc\ncuda:\n  arch: sm_80\n");
  ASSERT_TRUE(c) << c.message();
  const auto& compiler = c->section<compiler_section>();
  EXPECT_EQ(compiler.cxx, "/opt/my/nvcc");
  EXPECT_NE(std::find(compiler.flags.begin(), compiler.flags.end(), "-arch=sm_80"), compiler.flags.end());
  auto nvcc = parse("target: cuda\ncuda:\n  nvcc: /opt/other/nvcc\n");
  ASSERT_TRUE(nvcc) << nvcc.message();
  EXPECT_EQ(nvcc->section<compiler_section>().cxx, "/opt/other/nvcc");
}

// The resolved values are what a run directory's config.yaml holds, so a resumed run reads them back.
TEST(Sections, TheDumpedConfigCarriesTheResolvedSections) {
  auto c = runtime::parse_config(runtime::embedded_gpu_config(), {"grpo.lr=0.003"}, "gpu.yaml");
  ASSERT_TRUE(c) << c.message();
  auto back = parse(runtime::to_yaml(*c));
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->section<compiler_section>().cxx, c->section<compiler_section>().cxx);
  EXPECT_EQ(back->section<compiler_section>().flags, c->section<compiler_section>().flags);
  EXPECT_DOUBLE_EQ(back->section<grpo_section>().lr, 0.003);
  EXPECT_EQ(runtime::to_yaml(*back), runtime::to_yaml(*c));
}

}  // namespace
}  // namespace crucible::actors
