#include "policies/grpo_trainer.hpp"

#include <cmath>
#include <functional>
#include <iostream>
#include <limits>

#include <gtest/gtest.h>

#include "kernels/program/program_space.hpp"
#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

using testing::make_prompt;
using reward_fn = std::function<double(const kernels::program&)>;

policy_config small_config() {
  policy_config c;
  c.d_model = 32;
  c.layers = 2;
  c.heads = 4;
  c.max_context = 256;
  return c;
}

/// One GRPO group as the conductor would insert it: sampled candidates with their rewards.
scored_group make_group(program_policy& policy, const task_spec& t, int n, uint64_t seed,
                        const reward_fn& reward, int64_t version = 0) {
  auto samples = policy.sample(make_prompt(t, {}, n), n, 1.0, seed);
  EXPECT_TRUE(samples) << samples.message();
  scored_group g;
  g.group_id = t.name + "-" + std::to_string(seed);
  g.task = t.name;
  g.policy_version = version;
  for (size_t i = 0; i < samples->size(); ++i) {
    const auto& s = (*samples)[i];
    scored_candidate sc;
    sc.cand.id = g.group_id + "-" + std::to_string(i);
    sc.cand.group_id = g.group_id;
    sc.cand.task = t.name;
    sc.cand.program = s.program_text;
    sc.cand.policy_version = version;
    sc.cand.tokens = s.tokens;
    sc.cand.logprobs = s.logprobs;
    sc.cand.context = s.context;
    sc.reward = reward(s.prog);
    g.members.push_back(std::move(sc));
  }
  return g;
}

bool has_rewrite(const kernels::program& p, const std::string& name) {
  return std::find(p.rewrites.begin(), p.rewrites.end(), name) != p.rewrites.end();
}

/// The target behaviour of the learning test, partial credit for each part: compute the GEMM's row sum as
/// a GEMV (CUDA-L1's largest class of wins), with the simd strategy, with 8 accumulators.
double gemv_reward(const kernels::program& p) {
  double r = 0.0;
  if (has_rewrite(p, "gemm_rowsum_to_gemv")) r += 1.0;
  for (const auto& g : p.groups) {
    if (g.strategy == "simd" && g.knobs.count("acc")) {  // the gemv group (elementwise simd has no acc)
      r += 1.0;
      auto it = g.knobs.find("acc");
      if (it != g.knobs.end() && it->second == "8") r += 1.0;
    }
  }
  return r / 3.0;
}

/// Softmax task: reward the online (single-pass) row strategy.
double online_reward(const kernels::program& p) {
  for (const auto& g : p.groups)
    if (g.strategy == "online") return 1.0;
  return 0.0;
}

std::map<std::string, task_spec> task_map() {
  std::map<std::string, task_spec> m;
  for (const auto& t : testing::all_tasks()) m[t.name] = t;
  return m;
}

double mean_reward(const std::vector<scored_group>& groups) {
  double s = 0.0;
  size_t n = 0;
  for (const auto& g : groups)
    for (const auto& m : g.members) {
      s += m.reward;
      ++n;
    }
  return n ? s / static_cast<double>(n) : 0.0;
}

TEST(GroupAdvantages, GrpoStandardizesAndClips) {
  auto a = group_advantages({0.0, 1.0}, "grpo", 1.5);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NEAR(a[0], -1.0, 1e-4);
  EXPECT_NEAR(a[1], 1.0, 1e-4);
  auto b = group_advantages({1.0, 2.0, 3.0, 4.0}, "grpo", 10.0);
  double mean = 0.0, sq = 0.0;
  for (double x : b) mean += x / 4;
  for (double x : b) sq += (x - mean) * (x - mean) / 4;
  EXPECT_NEAR(mean, 0.0, 1e-9);
  EXPECT_NEAR(std::sqrt(sq), 1.0, 1e-4);
  // One outlier: its standardized advantage (about 1.73) is clipped to the smoothing bound.
  auto c = group_advantages({0.0, 0.0, 0.0, 10.0}, "grpo", 1.5);
  EXPECT_DOUBLE_EQ(c[3], 1.5);
  EXPECT_NEAR(c[0], -10.0 / 4 / (std::sqrt(18.75) + 1e-6), 1e-6);
  // No signal: all zero.
  for (double x : group_advantages({2.0, 2.0, 2.0}, "grpo", 1.5)) EXPECT_EQ(x, 0.0);
  EXPECT_EQ(group_advantages({3.0}, "grpo", 1.5), std::vector<double>{0.0});
  EXPECT_TRUE(group_advantages({}, "grpo", 1.5).empty());
  // A non-finite reward counts as a failure (0).
  auto d = group_advantages({std::numeric_limits<double>::quiet_NaN(), 1.0}, "grpo", 1.5);
  EXPECT_NEAR(d[0], -1.0, 1e-4);
}

TEST(GroupAdvantages, DrGrpoCentresWithoutScaling) {
  auto a = group_advantages({0.0, 0.5, 4.0}, "dr_grpo", 1.5);
  EXPECT_DOUBLE_EQ(a[0], -1.5);
  EXPECT_DOUBLE_EQ(a[1], 0.5 - 1.5);
  EXPECT_DOUBLE_EQ(a[2], 1.5);  // 4 - 1.5 = 2.5, clipped
  auto b = group_advantages({1.0, 1.2}, "dr_grpo", 1.5);
  EXPECT_NEAR(b[0], -0.1, 1e-12);
  EXPECT_NEAR(b[1], 0.1, 1e-12);
  for (double x : group_advantages({7.0, 7.0}, "dr_grpo", 1.5)) EXPECT_EQ(x, 0.0);
}

TEST(GroupAdvantages, DapoMatchesGrpo) {
  EXPECT_EQ(group_advantages({0.0, 1.0, 3.0}, "dapo", 1.5), group_advantages({0.0, 1.0, 3.0}, "grpo", 1.5));
  for (double x : group_advantages({1.0, 1.0}, "dapo", 1.5)) EXPECT_EQ(x, 0.0);
}

TEST(GrpoTrainer, KlIsZeroAtTheStartAndRatiosAreOne) {
  program_policy policy(small_config(), 3);
  grpo_config cfg;
  cfg.epochs = 1;
  grpo_trainer trainer(policy, cfg, 1);
  auto t = testing::gemm_row_sum_task();
  std::vector<scored_group> groups = {make_group(policy, t, 8, 1, gemv_reward),
                                      make_group(policy, testing::softmax_task(), 8, 2, online_reward)};
  auto stats = trainer.step(groups, task_map());
  ASSERT_TRUE(stats) << stats.message();
  EXPECT_NEAR(stats->kl, 0.0, 1e-6);
  EXPECT_NEAR(stats->ratio_max, 1.0, 1e-3);
  EXPECT_EQ(stats->clip_fraction, 0.0);
  EXPECT_EQ(stats->samples, 16);
  EXPECT_GT(stats->tokens, 16);
  EXPECT_GT(stats->entropy, 0.3);
  EXPECT_GT(stats->advantage_abs_mean, 0.1);
  EXPECT_EQ(stats->skipped_samples, 0);
  // After the update the policy has moved: the KL to the reference is positive (and small).
  auto again = trainer.step(groups, task_map());
  ASSERT_TRUE(again);
  EXPECT_GT(again->kl, 0.0);
  EXPECT_LT(again->kl, 0.1);
}

TEST(GrpoTrainer, RejectsBadInputAndSkipsWhatCannotTrain) {
  program_policy policy(small_config(), 3);
  grpo_config cfg;
  cfg.variant = "dapo";
  grpo_trainer trainer(policy, cfg, 1);
  auto t = testing::softmax_task();
  auto flat = make_group(policy, t, 4, 1, [](const kernels::program&) { return 1.0; });
  auto stats = trainer.step({flat}, task_map());
  ASSERT_TRUE(stats) << stats.message();
  EXPECT_EQ(stats->skipped_groups, 1);
  EXPECT_EQ(stats->samples, 0) << "dapo drops groups without reward variance";

  auto g = make_group(policy, t, 4, 2, online_reward);
  g.members[0].reward = 0.0;
  g.members[1].reward = 1.0;
  g.members[2].cand.tokens.pop_back();  // no longer replays
  g.members[3].cand.logprobs.clear();
  auto s2 = trainer.step({g}, task_map());
  ASSERT_TRUE(s2) << s2.message();
  EXPECT_EQ(s2->skipped_samples, 2);
  EXPECT_EQ(s2->samples, 2);

  auto missing = trainer.step({g}, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("no task"), std::string::npos);

  grpo_config bad;
  bad.variant = "ppo";
  grpo_trainer other(policy, bad, 1);
  EXPECT_FALSE(other.step({g}, task_map()));
}

/// Mean reward of 32 fresh samples per task (fixed seeds), the policy's expected reward to within noise.
double evaluate(program_policy& policy) {
  std::vector<scored_group> groups = {make_group(policy, testing::gemm_row_sum_task(), 32, 9001, gemv_reward),
                                      make_group(policy, testing::softmax_task(), 32, 9002, online_reward)};
  return mean_reward(groups);
}

void learn(const std::string& variant, double lr, int steps, double* before, double* after) {
  program_policy policy(small_config(), 7);
  grpo_config cfg;
  cfg.variant = variant;
  cfg.lr = lr;
  cfg.epochs = 2;
  cfg.kl_coef = 0.01;
  grpo_trainer trainer(policy, cfg, 1);
  const auto tasks = task_map();
  const auto a = testing::gemm_row_sum_task();
  const auto b = testing::softmax_task();
  *before = evaluate(policy);
  uint64_t seed = 100;
  step_stats last;
  for (int step = 0; step < steps; ++step) {
    std::vector<scored_group> groups = {make_group(policy, a, 8, seed++, gemv_reward, step),
                                        make_group(policy, b, 8, seed++, online_reward, step)};
    auto stats = trainer.step(groups, tasks);
    ASSERT_TRUE(stats) << stats.message();
    last = *stats;
  }
  *after = evaluate(policy);
  std::cout << "[ grpo     ] " << variant << ": expected reward " << *before << " -> " << *after << " after "
            << steps << " steps of 2 groups x 8 (last step: kl " << last.kl << ", entropy " << last.entropy
            << ")\n";
}

TEST(GrpoTrainer, LearnsASyntheticReward) {
  double before = 0, after = 0;
  learn("grpo", 1e-2, 20, &before, &after);
  EXPECT_LT(before, 0.45);
  EXPECT_GT(after, 0.8);
  EXPECT_GT(after - before, 0.4);
}

TEST(GrpoTrainer, DapoAndDrGrpoLearnToo) {
  for (const char* variant : {"dapo", "dr_grpo"}) {
    double before = 0, after = 0;
    learn(variant, 1e-2, 12, &before, &after);
    EXPECT_GT(after - before, 0.25) << variant;
  }
}

TEST(GrpoTrainer, StateRoundTripContinuesIdentically) {
  const auto tasks = task_map();
  const auto t = testing::gemm_row_sum_task();
  grpo_config cfg;
  cfg.lr = 5e-3;
  program_policy p1(small_config(), 1);
  grpo_trainer t1(p1, cfg, 1);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(t1.step({make_group(p1, t, 8, 10 + i, gemv_reward)}, tasks));
  auto state = t1.save_state();

  program_policy p2(small_config(), 2);  // other initial weights: all must come from the state
  grpo_trainer t2(p2, cfg, 2);
  ASSERT_TRUE(t2.load_state(state));
  EXPECT_EQ(p2.save_weights(), p1.save_weights());
  auto g = make_group(p1, t, 8, 50, gemv_reward);
  auto s1 = t1.step({g}, tasks);
  auto s2 = t2.step({g}, tasks);
  ASSERT_TRUE(s1 && s2);
  EXPECT_NEAR(s1->loss, s2->loss, 1e-6);
  EXPECT_NEAR(s1->kl, s2->kl, 1e-7) << "the reference policy travels with the state";
  EXPECT_NEAR(s1->grad_norm, s2->grad_norm, 1e-5);
  EXPECT_EQ(p2.save_weights(), p1.save_weights()) << "Adam moments travel with the state";

  auto garbage = t2.load_state(std::vector<char>(100, 'x'));
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.message().find("not a trainer checkpoint"), std::string::npos) << garbage.message();
  auto weights_only = t2.load_state(p1.save_weights());
  ASSERT_FALSE(weights_only);
  EXPECT_NE(weights_only.message().find("no trainer record"), std::string::npos) << weights_only.message();
  policy_config wide = small_config();
  wide.d_model = 64;
  program_policy p3(wide, 1);
  grpo_trainer t3(p3, cfg, 1);
  auto mismatch = t3.load_state(state);
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.message().find("architecture mismatch"), std::string::npos) << mismatch.message();
}

TEST(GrpoTrainer, EntropyBonusIsTheOnlyForceWithoutSignal) {
  // Equal rewards, no KL: a fresh policy gets exactly zero gradient, unless the entropy bonus is on.
  const auto tasks = task_map();
  const auto t = testing::softmax_task();
  program_policy policy(small_config(), 4);
  auto flat = make_group(policy, t, 8, 1, [](const kernels::program&) { return 0.5; });
  grpo_config cfg;
  cfg.kl_coef = 0.0;
  grpo_trainer plain(policy, cfg, 1);
  auto s1 = plain.step({flat}, tasks);
  ASSERT_TRUE(s1);
  EXPECT_EQ(s1->skipped_groups, 1);
  EXPECT_EQ(s1->grad_norm, 0.0);
  cfg.entropy_coef = 0.1;
  grpo_trainer bonus(policy, cfg, 1);
  auto s2 = bonus.step({flat}, tasks);
  ASSERT_TRUE(s2);
  EXPECT_GT(s2->grad_norm, 0.0);
  EXPECT_LT(s2->loss, 0.0);
}

TEST(GrpoTrainer, StaleSamplesAreClipped) {
  // Samples from an older policy: after several updates, their stored log-probs disagree with the policy,
  // the ratio moves off 1 and the clip engages.
  const auto tasks = task_map();
  const auto t = testing::gemm_row_sum_task();
  program_policy policy(small_config(), 4);
  grpo_config cfg;
  cfg.lr = 2e-2;
  grpo_trainer trainer(policy, cfg, 1);
  auto old = make_group(policy, t, 8, 1, gemv_reward);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(trainer.step({make_group(policy, t, 8, 2 + i, gemv_reward)}, tasks));
  auto stats = trainer.step({old}, tasks);
  ASSERT_TRUE(stats);
  EXPECT_GT(std::abs(stats->ratio_max - 1.0), 0.05);
  EXPECT_GT(stats->clip_fraction, 0.0);
}

}  // namespace
}  // namespace crucible::policies
