// The rule-based judge on the labelled corpus (tests/data/corpus): with every hack of the corpus loaded as a
// confirmed case, no honest kernel is flagged, even reviewed as an extreme outlier; and a hack that comes
// back unchanged after the verifier let it pass is convicted when its mechanism is visible in its source.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kernels/verify/outlier_review.hpp"

namespace crucible::kernels {
namespace {

namespace fs = std::filesystem;

const std::string corpus = std::string(CRUCIBLE_TEST_DATA_DIR) + "/corpus";

struct labelled {
  std::string path, task, target, source;
};

std::vector<labelled> files_of(const std::string& target, const std::string& label) {
  std::vector<labelled> out;
  for (const auto& e : fs::directory_iterator(corpus + "/" + target + "/" + label)) {
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    labelled l{e.path().filename().string(), "", target, ss.str()};
    std::istringstream header(l.source.substr(0, l.source.find('\n')));
    for (std::string kv; header >> kv;)
      if (kv.rfind("task=", 0) == 0) l.task = kv.substr(5);
    out.push_back(std::move(l));
  }
  return out;
}

scored_candidate as_outlier(const labelled& l) {
  scored_candidate s;
  s.cand.id = l.path;
  s.cand.task = l.task;
  s.cand.target = l.target;
  s.cand.source = l.source;
  s.judged.outcome = "pass";
  s.judged.speedup = 50.0;  // every trigger at once: the harshest review there is
  s.judged.reward = 50.0;
  s.bench.peak_fraction = 0.95;
  return s;
}

class CorpusJudge : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusJudge, FlagsNoHonestKernelWithTheHackCorpusAsCases) {
  const std::string target = GetParam();
  auto db = *hack_case_db::open("");
  auto seeded = db->seed_from_dir(corpus + "/" + target + "/hack");
  ASSERT_TRUE(seeded) << seeded.message();
  ASSERT_GT(*seeded, 0);
  rule_reviewer rules;
  review_options o;
  auto honest = files_of(target, "honest");
  ASSERT_FALSE(honest.empty());
  int upheld = 0;
  for (const auto& l : honest) {
    auto s = as_outlier(l);
    ASSERT_TRUE(review_outlier(s, *db, rules, o, -1.0)) << l.path;
    EXPECT_NE(s.judged.review.finding, "hack") << l.path << ": " << s.judged.review.reasoning;
    EXPECT_EQ(s.judged.outcome, "pass") << l.path;
    EXPECT_DOUBLE_EQ(s.judged.reward, 50.0) << l.path;
    upheld += s.judged.review.finding == "upheld";
  }
  EXPECT_EQ(upheld, static_cast<int>(honest.size())) << "no honest kernel is a near-duplicate of a hack";
}

TEST_P(CorpusJudge, ConvictsAHackThatComesBackWithItsMechanismVisible) {
  const std::string target = GetParam();
  auto db = *hack_case_db::open("");
  ASSERT_TRUE(db->seed_from_dir(corpus + "/" + target + "/hack"));
  rule_reviewer rules;
  review_options o;
  int with_mechanism = 0;
  for (const auto& l : files_of(target, "hack")) {
    auto s = as_outlier(l);
    // A re-sample of the same hack under other names: a comment and renamed locals change no token.
    s.cand.source = "// resampled\n" + l.source;
    ASSERT_TRUE(review_outlier(s, *db, rules, o, -1.0));
    bool mechanism = !candidate_static_features(s).empty();
    with_mechanism += mechanism;
    if (mechanism) {
      EXPECT_EQ(s.judged.review.finding, "hack") << l.path << ": " << s.judged.review.reasoning;
      EXPECT_EQ(s.judged.outcome, "hack") << l.path;
    } else {
      EXPECT_EQ(s.judged.review.finding, "inconclusive") << l.path << ": " << s.judged.review.reasoning;
    }
  }
  EXPECT_GT(with_mechanism, 0);
}

INSTANTIATE_TEST_SUITE_P(Targets, CorpusJudge, ::testing::Values("cpu", "cuda"));

}  // namespace
}  // namespace crucible::kernels
