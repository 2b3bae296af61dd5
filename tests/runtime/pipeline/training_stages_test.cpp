#include "runtime/pipeline/training_stages.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

TEST(TrainingStages, NamesRoundTripAndListsAreChecked) {
  for (auto s : {training_stage::sft, training_stage::self_supervised, training_stage::contrastive})
    EXPECT_EQ(parse_training_stage(wire_name(s)), s);
  EXPECT_FALSE(parse_training_stage("grpo"));
  auto ok = parse_stage_list({"sft", "self_supervised", "contrastive"});
  ASSERT_TRUE(ok) << ok.message();
  EXPECT_EQ(ok->size(), 3u);
  EXPECT_TRUE(staged(*ok));
  EXPECT_FALSE(staged(*parse_stage_list({"contrastive"})));
  EXPECT_TRUE(staged(*parse_stage_list({"sft"})));
  EXPECT_NE(parse_stage_list({"contrastive", "sft"}).message().find("must come before"), std::string::npos);
  EXPECT_NE(parse_stage_list({"sft", "sft"}).message().find("twice"), std::string::npos);
  EXPECT_NE(parse_stage_list({"rl"}).message().find("unknown stage 'rl'"), std::string::npos);
  EXPECT_FALSE(parse_stage_list({}));
}

TEST(TrainingStages, ProgressFileRecordsDoneStagesAndRefusesAnotherConfigs) {
  auto dir = (fs::temp_directory_path() / ("crucible-stages-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<training_stage> all = {training_stage::sft, training_stage::self_supervised,
                                           training_stage::contrastive};
  auto none = load_stages_done(dir, all);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(mark_stage_done(dir, training_stage::sft));
  ASSERT_TRUE(mark_stage_done(dir, training_stage::sft));  // idempotent
  ASSERT_TRUE(mark_stage_done(dir, training_stage::self_supervised));
  auto two = load_stages_done(dir, all);
  ASSERT_TRUE(two) << two.message();
  EXPECT_EQ(*two, (std::vector<training_stage>{training_stage::sft, training_stage::self_supervised}));
  auto other = load_stages_done(dir, {training_stage::contrastive});
  ASSERT_FALSE(other);
  EXPECT_NE(other.message().find("do not list it"), std::string::npos);
  std::ofstream(dir + "/stages.json") << "{\"done\": 3}";
  EXPECT_FALSE(load_stages_done(dir, all));
  EXPECT_EQ(stage_dir("/r", training_stage::self_supervised), "/r/stages/self_supervised");
  fs::remove_all(dir);
}

TEST(TrainingStages, PlateauNeedsAFullWindowWithoutGain) {
  plateau_watch w(2, 0.05);
  EXPECT_FALSE(w.add(0.1));  // the first window is not full
  EXPECT_FALSE(w.add(0.3));  // mean 0.2: the first best
  EXPECT_FALSE(w.add(0.5));  // mean 0.4: a gain
  EXPECT_FALSE(w.add(0.4));  // mean 0.45: a gain of exactly min_gain is not enough; 1 step without
  EXPECT_TRUE(w.add(0.42));  // mean 0.41: 2 steps without a gain
  EXPECT_DOUBLE_EQ(w.best(), 0.4);
  plateau_watch rising(3, 0.01);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(rising.add(0.05 * i));
}

}  // namespace
}  // namespace crucible::runtime
