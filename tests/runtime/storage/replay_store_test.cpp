#include "runtime/storage/replay_store.hpp"

#include <filesystem>
#include <set>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

struct temp_db {
  fs::path dir = fs::temp_directory_path() / ("crucible-replay-" + std::to_string(::getpid()));
  temp_db() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~temp_db() { fs::remove_all(dir); }
  std::string path() const { return (dir / "replay.sqlite").string(); }
};

scored_group make_group(const std::string& gid, const std::string& task, int64_t version,
                        const std::vector<double>& speedups) {
  scored_group g;
  g.group_id = gid;
  g.task = task;
  g.policy_version = version;
  for (size_t i = 0; i < speedups.size(); ++i) {
    scored_candidate s;
    s.cand.id = gid + "-" + std::to_string(i);
    s.cand.group_id = gid;
    s.cand.task = task;
    s.cand.program = "p" + std::to_string(i);
    s.cand.source = "src";
    s.judged.outcome = speedups[i] > 0 ? "pass" : "incorrect";
    s.judged.speedup = speedups[i];
    s.reward = speedups[i];
    g.members.push_back(s);
  }
  return g;
}

TEST(ReplayStore, InsertsEveryCandidateOnceAndIgnoresResends) {
  temp_db db;
  auto store = replay_store::open(db.path(), {}, 1);
  ASSERT_TRUE(store) << store.message();
  auto r = store->insert(make_group("g0", "t", 0, {1.0, 2.0, 0.0}));
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->inserted, 3);
  auto again = store->insert(make_group("g0", "t", 0, {1.0, 2.0, 0.0}));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->inserted, 0);
  EXPECT_EQ(again->duplicates, 3);
  EXPECT_EQ(store->candidates_total(), 3);
  EXPECT_EQ(store->pending_groups(), 1u);
  EXPECT_DOUBLE_EQ(store->speedup_best().at("t"), 2.0);
}

TEST(ReplayStore, ExemplarsComeFromDistinctBuckets) {
  temp_db db;
  replay_options opt;
  opt.bucket_edges = {0.5, 0.9, 1.1, 1.5, 3.0};
  auto store = replay_store::open(db.path(), opt, 7);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->insert(make_group("g0", "t", 0, {0.3, 0.35, 1.0, 1.05, 4.0, 5.0, 0.0, 0.0})));
  for (int i = 0; i < 200; ++i) {
    auto ex = store->exemplars("t", 2);
    ASSERT_EQ(ex.size(), 2u);
    EXPECT_NE(ex[0].bucket, ex[1].bucket);
    for (const auto& e : ex) {
      EXPECT_EQ(e.bucket, store->bucket_of(e.speedup));
      EXPECT_GT(e.speedup, 0.0);  // failures are never shown as exemplars
    }
  }
  EXPECT_TRUE(store->exemplars("unknown_task", 2).empty());
}

TEST(ReplayStore, TemperatureFavoursFasterBuckets) {
  temp_db db;
  replay_options opt;
  opt.temperature = 0.5;
  auto store = replay_store::open(db.path(), opt, 3);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->insert(make_group("g0", "t", 0, {0.2, 1.0, 6.0})));
  int fast_first = 0;
  for (int i = 0; i < 400; ++i) fast_first += store->exemplars("t", 1).front().speedup == 6.0;
  EXPECT_GT(fast_first, 300);  // softmax over bucket means: exp(12) dominates
}

TEST(ReplayStore, StaleGroupsAreDroppedNotTrained) {
  temp_db db;
  replay_options opt;
  opt.max_staleness = 1;
  auto store = replay_store::open(db.path(), opt, 1);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->insert(make_group("old", "t", 0, {1, 2})));
  ASSERT_TRUE(store->insert(make_group("new", "t", 4, {1, 2})));
  auto batch = store->take_groups(5, 4);
  EXPECT_EQ(batch.dropped_stale, 1);
  ASSERT_EQ(batch.groups.size(), 1u);
  EXPECT_EQ(batch.groups[0].group_id, "new");
  EXPECT_EQ(batch.candidates_total, 4);
  EXPECT_TRUE(store->take_groups(5, 4).groups.empty());
}

TEST(ReplayStore, ReopeningRestoresPendingGroupsAndExemplars) {
  temp_db db;
  {
    auto store = replay_store::open(db.path(), {}, 1);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->insert(make_group("a", "t", 0, {1.2, 0.0})));
    ASSERT_TRUE(store->insert(make_group("b", "t", 0, {2.5, 0.7})));
    ASSERT_EQ(store->take_groups(0, 1).groups.size(), 1u);  // "a" is trained on
  }
  auto store = replay_store::open(db.path(), {}, 1);
  ASSERT_TRUE(store) << store.message();
  EXPECT_EQ(store->candidates_total(), 4);
  EXPECT_EQ(store->pending_groups(), 1u);
  auto batch = store->take_groups(0, 4);
  ASSERT_EQ(batch.groups.size(), 1u);
  EXPECT_EQ(batch.groups[0].group_id, "b");
  ASSERT_EQ(batch.groups[0].members.size(), 2u);
  EXPECT_EQ(batch.groups[0].members[0].cand.program, "p0");
  EXPECT_DOUBLE_EQ(store->speedup_best().at("t"), 2.5);
  EXPECT_FALSE(store->exemplars("t", 2).empty());
}

TEST(ReplayStore, PartialGroupsAreStoredButNeverTrainedOn) {
  temp_db db;
  auto store = replay_store::open(db.path(), {}, 1);
  ASSERT_TRUE(store);
  auto g = make_group("cut", "t", 0, {1.5, 0.0});
  g.partial = true;
  g.members[1].judged.outcome = "abandoned";
  auto r = store->insert(g);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->inserted, 2);
  EXPECT_EQ(store->pending_groups(), 0u);
  EXPECT_TRUE(store->take_groups(0, 4).groups.empty());
  EXPECT_EQ(store->exemplars("t", 2).size(), 1u);  // its finished, passing member still teaches
}

std::string group_state(const std::string& db_path, const std::string& gid) {
  auto summary = replay_store::summarize(db_path);
  if (!summary) return "?";
  for (const auto& g : summary->groups)
    if (g.group_id == gid) return g.state;
  return "";
}

TEST(ReplayStore, AGroupRecordedInFlightIsScoredInPlaceAndNeverTwice) {
  temp_db db;
  auto store = replay_store::open(db.path(), {}, 1);
  ASSERT_TRUE(store);
  auto g = make_group("f", "t", 2, {3.0, 0.0});
  auto pending = g;
  for (auto& m : pending.members) m.judged = verdict{};
  pending.stages = {"benchmark", "compile"};
  auto rec = store->record(pending);
  ASSERT_TRUE(rec) << rec.message();
  EXPECT_EQ(*rec, 2);
  EXPECT_EQ(store->candidates_total(), 0);  // in flight is not stored-as-scored
  EXPECT_EQ(group_state(db.path(), "f"), "in_flight");
  pending.stages = {"verify", "compile"};  // member 0 moved on
  ASSERT_TRUE(store->record(pending));
  auto in_flight = store->in_flight();
  ASSERT_EQ(in_flight.size(), 1u);
  EXPECT_EQ(in_flight[0].stages, (std::vector<std::string>{"verify", "compile"}));
  EXPECT_EQ(in_flight[0].members[0].cand.id, "f-0");
  EXPECT_EQ(in_flight[0].policy_version, 2);
  auto r = store->insert(g);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->inserted, 2);
  EXPECT_EQ(store->candidates_total(), 2);
  EXPECT_EQ(store->pending_groups(), 1u);
  EXPECT_TRUE(store->in_flight().empty());
  EXPECT_EQ(group_state(db.path(), "f"), "pending");
  // A late progress note or a re-sent group changes nothing now.
  auto late = store->record(pending);
  ASSERT_TRUE(late);
  EXPECT_EQ(*late, 0);
  EXPECT_EQ(store->insert(g)->duplicates, 2);
  auto summary = replay_store::summarize(db.path());
  EXPECT_EQ(summary->outcomes.count("pending"), 0u);
  EXPECT_DOUBLE_EQ(summary->speedup_best.at("t"), 3.0);
  // Reopened, the totals count scored candidates only.
  auto reopened = replay_store::open(db.path(), {}, 1);
  EXPECT_EQ(reopened->candidates_total(), 2);
}

TEST(ReplayStore, WhatIsLeftInFlightCanBeStoredAsAbandoned) {
  temp_db db;
  auto store = replay_store::open(db.path(), {}, 1);
  ASSERT_TRUE(store);
  auto g = make_group("k", "t", 0, {2.0, 1.0});
  g.members[0].judged.reward = 0.7;
  g.stages = {"scored", "benchmark"};
  ASSERT_TRUE(store->record(g));
  auto n = store->abandon_in_flight("the run ended");
  ASSERT_TRUE(n) << n.message();
  EXPECT_EQ(*n, 1);
  EXPECT_TRUE(store->in_flight().empty());
  EXPECT_EQ(group_state(db.path(), "k"), "partial");
  auto summary = replay_store::summarize(db.path());
  EXPECT_EQ(summary->outcomes.at("pass"), 1);
  EXPECT_EQ(summary->outcomes.at("abandoned"), 1);
  EXPECT_EQ(store->pending_groups(), 0u);
}

TEST(ReplayStore, GroupsAreTakenThenTrainedAndARolledBackLearnerTrainsThemAgain) {
  temp_db db;
  {
    auto store = replay_store::open(db.path(), {}, 1);
    ASSERT_TRUE(store);
    for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(store->insert(make_group(id, "t", 0, {1.0})));
    EXPECT_EQ(store->take_groups(0, 1).groups.size(), 1u);  // a, by v0
    EXPECT_EQ(group_state(db.path(), "a"), "taken");
    EXPECT_EQ(store->take_groups(1, 1).groups.size(), 1u);  // b, by v1: a was trained into v1
    EXPECT_EQ(group_state(db.path(), "a"), "trained");
    EXPECT_EQ(group_state(db.path(), "b"), "taken");
  }
  // The learner resumes from a checkpoint of v1: b's training (into v2) was lost.
  replay_options resumed;
  resumed.untrain_from_version = 1;
  auto store = replay_store::open(db.path(), resumed, 1);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->untrained(), 1);
  EXPECT_EQ(group_state(db.path(), "a"), "trained");
  EXPECT_EQ(group_state(db.path(), "b"), "pending");
  EXPECT_EQ(store->pending_groups(), 2u);  // b and c
  auto batch = store->take_groups(1, 4);
  ASSERT_EQ(batch.groups.size(), 2u);
  EXPECT_EQ(batch.groups[0].group_id, "b");
}

// Refinement: the task's latest attempts (any outcome that says something about the code), oldest first,
// as many as refine_turns; rebuilt when the database is reopened; none when refinement is off.
TEST(ReplayStore, TheLatestAttemptsPerTaskAreKeptForRefinement) {
  temp_db db;
  replay_options o;
  o.refine_turns = 2;
  {
    auto off = replay_store::open(db.path(), {}, 1);
    ASSERT_TRUE(off);
    ASSERT_TRUE(off->insert(make_group("a", "t", 0, {1.5})));
    EXPECT_TRUE(off->attempts("t").empty());
  }
  {
    auto store = replay_store::open(db.path(), o, 1);
    ASSERT_TRUE(store);
    ASSERT_EQ(store->attempts("t").size(), 1u);  // from the database
    auto g = make_group("b", "t", 0, {0.0, 2.0});
    g.members[0].judged.outcome = "compile_error";
    g.members[0].compiled.log = "k.cpp:3: error: 'x' was not declared";
    auto infra = make_group("c", "t", 0, {0.0});
    infra.members[0].judged.outcome = "error";  // the evaluation failed on our side: not fed back
    ASSERT_TRUE(store->insert(g));
    ASSERT_TRUE(store->insert(infra));
    ASSERT_TRUE(store->insert(make_group("d", "u", 0, {1.1})));
    auto a = store->attempts("t");
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].candidate_id, "b-0");
    EXPECT_NE(a[0].feedback.find("was not declared"), std::string::npos);
    EXPECT_EQ(a[1].candidate_id, "b-1");
    EXPECT_NE(a[1].feedback.find("2x"), std::string::npos);
    EXPECT_EQ(store->attempts("u").size(), 1u);
    EXPECT_TRUE(store->attempts("nothing").empty());
  }
  auto again = replay_store::open(db.path(), o, 1);
  ASSERT_TRUE(again);
  auto a = again->attempts("t");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].candidate_id, "b-0");
  EXPECT_EQ(a[1].candidate_id, "b-1");
}

TEST(ReplayStore, UnopenablePathIsAnError) {
  auto store = replay_store::open("/nonexistent-dir/x/replay.sqlite", {}, 1);
  EXPECT_FALSE(store);
}

}  // namespace
}  // namespace crucible::runtime
