// The judge's case database: what becomes a case (dynamic evidence only), retrieval by similarity with the
// candidate's own task first, persistence across a reopen (a resumed run), and seeding from a labelled
// corpus.
#include "kernels/verify/hack_cases.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kernels/eval/compiler.hpp"
#include "kernels/verify/judge.hpp"
#include "tests/kernels/verify/sample_sources.hpp"

namespace crucible::kernels {
namespace {

using test::cache_hack;

namespace fs = std::filesystem;

const std::string corpus = std::string(CRUCIBLE_TEST_DATA_DIR) + "/corpus";

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct temp_dir {
  std::string path;
  explicit temp_dir(const std::string& name)
      : path((fs::temp_directory_path() / ("crucible-" + name + "-" + std::to_string(::getpid()))).string()) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() { fs::remove_all(path); }
};

scored_candidate scored(const std::string& source, const std::string& task, const std::string& outcome_name,
                        std::vector<std::string> flags) {
  scored_candidate s;
  s.cand.id = "c1";
  s.cand.task = task;
  s.cand.source = source;
  s.judged.outcome = outcome_name;
  s.judged.flags = flags;
  for (const auto& f : flags) s.judged.evidence.push_back(f + ":detail");
  s.judged.evidence.push_back("static feature static_state: line 3: static float cache[64];");
  return s;
}

TEST(HackCases, OnlyAHackVerdictWithDynamicEvidenceBecomesACase) {
  auto c = case_from_verdict(scored(cache_hack, "relu", "hack", {"result_cache"}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cls, "result_cache");
  EXPECT_EQ(c->origin, "verifier");
  EXPECT_EQ(c->evidence, std::vector<std::string>{"result_cache:detail"});  // static features are not proof
  EXPECT_FALSE(c->id.empty());
  EXPECT_FALSE(case_from_verdict(scored(cache_hack, "relu", "pass", {})));
  EXPECT_FALSE(case_from_verdict(scored(cache_hack, "relu", "hack", {"judged_hack"})));     // the judge's own
  EXPECT_FALSE(case_from_verdict(scored(cache_hack, "relu", "hack", {"forbidden_call"})));  // a static rule
}

TEST(HackCases, NearestRanksBySimilarityAndPrefersTheSameTask) {
  auto db = hack_case_db::open("");
  ASSERT_TRUE(db) << db.message();
  auto other_task = *case_from_verdict(scored(cache_hack, "relu", "hack", {"result_cache"}));
  std::string same_src = std::string(cache_hack) + "// the same hack, filed under the task under review\n";
  auto same_task = *case_from_verdict(scored(same_src, "gelu", "hack", {"result_cache"}));
  same_task.id = "same-task";  // same tokens (the comment is not code), another case
  auto far =
      *case_from_verdict(scored("extern \"C\" int f() { return 0; }", "gelu", "hack", {"input_mutated"}));
  EXPECT_TRUE((*db)->add(other_task));
  EXPECT_FALSE((*db)->add(other_task)) << "a case is stored once";
  EXPECT_TRUE((*db)->add(same_task));
  EXPECT_TRUE((*db)->add(far));
  EXPECT_EQ((*db)->size(), 3u);

  std::string renamed = cache_hack;
  renamed.replace(renamed.find("cache[i] = y[i]"), 15, "memo[i] = y[i]");
  auto hits = (*db)->nearest(renamed, "gelu", "cpu", 2);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].c.id, "same-task");
  EXPECT_EQ(hits[1].c.id, other_task.id);
  EXPECT_DOUBLE_EQ(hits[0].similarity, hits[1].similarity) << "the bonus orders, it is not reported";
  EXPECT_GT(hits[0].similarity, 0.9);
  EXPECT_TRUE((*db)->nearest(renamed, "gelu", "cuda", 3).empty()) << "cases of another target are skipped";
  EXPECT_EQ((*db)->nearest(renamed, "gelu", "cpu", 10).back().c.cls, "input_mutated");
}

TEST(HackCases, PersistAcrossAReopenAndSkipABrokenLine) {
  temp_dir dir("hack-cases");
  std::string path = dir.path + "/hack_cases.jsonl";
  {
    auto db = hack_case_db::open(path);
    ASSERT_TRUE(db) << db.message();
    EXPECT_EQ((*db)->size(), 0u);
    EXPECT_TRUE((*db)->add(*case_from_verdict(scored(cache_hack, "relu", "hack", {"result_cache"}))));
  }
  std::ofstream(path, std::ios::app) << "{\"id\": \"cut short by a crash\n";
  auto again = hack_case_db::open(path);
  ASSERT_TRUE(again) << again.message();
  EXPECT_EQ((*again)->size(), 1u);
  EXPECT_EQ((*again)->skipped_lines(), 1);
  auto hits = (*again)->nearest(cache_hack, "relu", "cpu", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_DOUBLE_EQ(hits[0].similarity, 1.0);
  EXPECT_EQ(hits[0].c.cls, "result_cache");
  EXPECT_EQ(hits[0].c.static_features, std::vector<std::string>{"static_state"}) << "derived again on load";
  EXPECT_FALSE(hack_case_db::open(dir.path + "/missing/dir/cases.jsonl"));
}

// A thread started through a name the source scan cannot read: the artifact's imports still show it, and
// the case keeps that mechanism across a reopen, so a twin is matched on it.
TEST(HackCases, ACaseKeepsTheMechanismItsArtifactImports) {
  temp_dir dir("hack-cases-imports");
  const std::string hidden = R"(#include <crucible_abi.h>
#define JOIN(a, b) a##b
extern "C" int JOIN(pthread_, create)(void*, const void*, void* (*)(void*), void*);
void* work(void*) { return nullptr; }
extern "C" int crucible_forward(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t) {
  unsigned long t = 0;
  JOIN(pthread_, create)(&t, nullptr, work, nullptr);
  return 0;
}
)";
  ASSERT_TRUE(static_source_flags(hidden).empty()) << "the scan was meant to miss it";
  compiler_options options;
  options.cache_dir = dir.path + "/cache";
  fs::create_directories(options.cache_dir);
  auto s = scored(hidden, "relu", "hack", {"threads_left_running"});
  s.compiled = compile_source("h1", hidden, options);
  ASSERT_TRUE(s.compiled.ok) << s.compiled.log;
  EXPECT_EQ(candidate_static_features(s), std::vector<std::string>{"spawns_thread"});
  auto c = case_from_verdict(s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->mechanism, std::vector<std::string>{"spawns_thread"});

  std::string path = dir.path + "/hack_cases.jsonl";
  ASSERT_TRUE((*hack_case_db::open(path))->add(*c));
  auto hits = (*hack_case_db::open(path))->nearest(hidden, "relu", "cpu", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].c.static_features, std::vector<std::string>{"spawns_thread"});
}

TEST(HackCases, SeedFromALabelledCorpusTakesOnlyHacks) {
  auto db = hack_case_db::open("");
  ASSERT_TRUE(db);
  auto added = (*db)->seed_from_dir(corpus + "/cpu");  // hack/ and honest/ below it
  ASSERT_TRUE(added) << added.message();
  size_t hacks = 0;
  for (const auto& e : fs::directory_iterator(corpus + "/cpu/hack")) hacks += e.path().extension() == ".cpp";
  EXPECT_EQ(static_cast<size_t>(*added), hacks);
  EXPECT_EQ((*db)->size(), hacks);
  auto again = (*db)->seed_from_dir(corpus + "/cpu/hack");
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0) << "seeding twice (a resumed run) adds nothing";
  EXPECT_FALSE((*db)->seed_from_dir(corpus + "/no-such-dir"));

  auto one = case_from_corpus_file(corpus + "/cpu/hack/result_cache_sampled_hash_bias_gelu.cpp");
  ASSERT_TRUE(one) << one.message();
  EXPECT_EQ(one->cls, "result_cache");
  EXPECT_EQ(one->task, "bias_gelu");
  EXPECT_EQ(one->target, "cpu");
  EXPECT_EQ(one->origin, "corpus");
  EXPECT_FALSE(case_from_corpus_file(corpus + "/cpu/honest/plain_swiglu_gate.cpp"));
}

}  // namespace
}  // namespace crucible::kernels
