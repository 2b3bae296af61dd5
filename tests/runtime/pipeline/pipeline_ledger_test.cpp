// The pipeline ledger on its own: every transition, re-dispatch, stale answers, the stop, and a restore from
// the replay database after a "kill" (the ledger and the store dropped, new ones opened on the same file).
#include "runtime/pipeline/pipeline_ledger.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

ledger_options options(int64_t groups_in_flight = 1) {
  ledger_options o;
  o.pipeline = {"compile", "benchmark", "verify"};
  o.tasks = {"t1", "t2"};
  o.incarnation = "r0";
  o.groups_in_flight = groups_in_flight;
  o.max_attempts = 2;
  return o;
}

std::vector<candidate> batch(const std::string& gid, const std::string& task, int n, int64_t version = 3) {
  std::vector<candidate> out;
  for (int i = 0; i < n; ++i) {
    candidate c;
    c.id = gid + "-" + std::to_string(i);
    c.group_id = gid;
    c.task = task;
    c.policy_version = version;
    c.content_hash = "h" + std::to_string(i);
    c.created_unix = 100.0 + i;
    out.push_back(c);
  }
  return out;
}

std::vector<ledger_command> of(const ledger_commands& cmds, ledger_action a) {
  std::vector<ledger_command> out;
  for (const auto& c : cmds)
    if (c.action == a) out.push_back(c);
  return out;
}

const ledger_command& only(const ledger_commands& cmds, ledger_action a) {
  static ledger_command none;
  auto found = std::find_if(cmds.begin(), cmds.end(), [&](const auto& c) { return c.action == a; });
  EXPECT_EQ(of(cmds, a).size(), 1u);
  return found == cmds.end() ? none : *found;
}

// The candidate as the stage would return it.
scored_candidate with(const pipeline_ledger& l, const std::string& id, const std::string& stage,
                      bool good = true, double speedup = 1.5) {
  scored_candidate s = *l.candidate_of(id);
  if (stage == "compile") s.compiled.ok = good;
  if (stage == "benchmark") {
    s.bench.status = "ok";
    s.bench.correct = good;
  }
  if (stage == "verify") {
    s.judged.outcome = good ? "pass" : "incorrect";
    s.judged.speedup = speedup;
    s.judged.reward = good ? 1.0 : 0.0;
  }
  return s;
}

// Opens one group of `n`, generated and recorded; returns the first dispatches.
ledger_commands running_group(pipeline_ledger& l, int n, std::string* gid = nullptr) {
  auto open = l.fill();
  const auto& gen = only(open, ledger_action::generate);
  if (gid) *gid = gen.group_id;
  l.generated(gen.group_id, batch(gen.group_id, gen.task, n));
  return l.recorded(gen.group_id);
}

// Answers every stage of `id` until it is scored; returns the last commands.
ledger_commands run_through(pipeline_ledger& l, const ledger_command& first, double speedup = 1.5) {
  ledger_command d = first;
  ledger_commands last;
  while (true) {
    last = l.answered(d.candidate_id, d.ticket, with(l, d.candidate_id, d.stage, true, speedup));
    auto next = of(last, ledger_action::dispatch);
    if (next.empty()) return last;
    d = next.front();
  }
}

TEST(PipelineLedger, OpensGroupsUpToTheLimitTakingTasksInTurn) {
  pipeline_ledger l(options(2));
  auto cmds = l.fill();
  auto gens = of(cmds, ledger_action::generate);
  ASSERT_EQ(gens.size(), 2u);
  EXPECT_EQ(gens[0].task, "t1");
  EXPECT_EQ(gens[1].task, "t2");
  EXPECT_NE(gens[0].group_id, gens[1].group_id);
  EXPECT_EQ(gens[0].group_id.rfind("r0-g", 0), 0u);
  EXPECT_TRUE(l.fill().empty());
  EXPECT_EQ(l.groups(), 2u);
}

TEST(PipelineLedger, AGeneratedGroupIsRecordedBeforeAnyDispatch) {
  pipeline_ledger l(options());
  auto gid = only(l.fill(), ledger_action::generate).group_id;
  auto cmds = l.generated(gid, batch(gid, "t1", 3));
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].action, ledger_action::record);
  EXPECT_EQ(cmds[0].candidate_ids, (std::vector<std::string>{gid + "-0", gid + "-1", gid + "-2"}));
  auto rec = l.record_of(gid, {});
  ASSERT_EQ(rec.members.size(), 3u);
  EXPECT_EQ(rec.stages, (std::vector<std::string>{"compile", "compile", "compile"}));
  EXPECT_EQ(rec.policy_version, 3);
  EXPECT_EQ(l.counts().generated, 3);
  EXPECT_EQ(l.counts().in_flight(), 3);
  // A failed record is retried, still before any dispatch.
  auto again = l.record_failed(gid);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].action, ledger_action::record);
  EXPECT_TRUE(again[0].later);
  auto go = l.recorded(gid);
  auto d = of(go, ledger_action::dispatch);
  ASSERT_EQ(d.size(), 3u);
  for (const auto& c : d) EXPECT_EQ(c.stage, "compile");
  EXPECT_NE(d[0].ticket, d[1].ticket);
  EXPECT_TRUE(l.recorded(gid).empty());  // a second acknowledgement dispatches nothing twice
}

// A language model's answer without usable code is scored `format` at once: never dispatched to a stage,
// recorded as scored, and its group stored once the others finish.
TEST(PipelineLedger, AnAnswerWithoutCodeIsScoredFormatWithoutAnyStage) {
  pipeline_ledger l(options());
  auto gid = only(l.fill(), ledger_action::generate).group_id;
  auto b = batch(gid, "t1", 2);
  b[1].format_error = "the answer has no fenced code block";
  l.generated(gid, b);
  auto rec = l.record_of(gid, {});
  EXPECT_EQ(rec.stages, (std::vector<std::string>{"compile", "scored"}));
  auto go = l.recorded(gid);
  auto d = of(go, ledger_action::dispatch);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].candidate_id, gid + "-0");
  const auto* f = l.candidate_of(gid + "-1");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->judged.outcome, "format");
  EXPECT_EQ(f->reward, 0.0);
  ASSERT_FALSE(f->judged.evidence.empty());
  EXPECT_NE(f->judged.evidence[0].find("no fenced code block"), std::string::npos);
  EXPECT_EQ(l.counts().scored, 1);

  // Every member without code: the group goes straight to storing.
  pipeline_ledger all(options());
  auto g2 = only(all.fill(), ledger_action::generate).group_id;
  auto b2 = batch(g2, "t1", 2);
  for (auto& c : b2) c.format_error = "no entry point";
  all.generated(g2, b2);
  auto cmds = all.recorded(g2);
  EXPECT_TRUE(of(cmds, ledger_action::dispatch).empty());
  EXPECT_EQ(only(cmds, ledger_action::store).group_id, g2);
}

TEST(PipelineLedger, EachAnswerMovesOneStageOnAndIsRecorded) {
  pipeline_ledger l(options());
  std::string gid;
  auto d = of(running_group(l, 2, &gid), ledger_action::dispatch);
  auto a = l.answered(d[0].candidate_id, d[0].ticket, with(l, d[0].candidate_id, "compile"));
  EXPECT_EQ(only(a, ledger_action::progress).stage, "benchmark");
  EXPECT_EQ(only(a, ledger_action::progress).candidate_ids, std::vector<std::string>{d[0].candidate_id});
  const auto& bench = only(a, ledger_action::dispatch);
  EXPECT_EQ(bench.stage, "benchmark");
  EXPECT_TRUE(l.candidate_of(d[0].candidate_id)->compiled.ok);
  EXPECT_EQ(l.record_of(gid, {}).stages, (std::vector<std::string>{"benchmark", "compile"}));
  auto last = run_through(l, bench, 2.5);
  EXPECT_EQ(only(last, ledger_action::progress).stage, stage_scored);
  EXPECT_TRUE(of(last, ledger_action::store).empty());  // the other member is still running
  EXPECT_EQ(l.counts().scored, 1);
  EXPECT_DOUBLE_EQ(l.best("t1"), 2.5);
  auto end = run_through(l, d[1], 1.2);
  const auto& st = only(end, ledger_action::store);
  EXPECT_EQ(st.group_id, gid);
  EXPECT_FALSE(st.partial);
  auto g = l.group_of(gid, false);
  ASSERT_EQ(g.members.size(), 2u);
  EXPECT_DOUBLE_EQ(g.members[0].reward, 1.0);
  EXPECT_TRUE(g.stages.empty());
  auto after = l.stored(gid);
  EXPECT_EQ(only(after, ledger_action::generate).task, "t2");  // the next group takes its place
  EXPECT_EQ(l.candidate_of(d[0].candidate_id), nullptr);
  EXPECT_EQ(l.counts().scored, 2);
  EXPECT_EQ(l.counts().in_flight(), 0);
  EXPECT_DOUBLE_EQ(l.best("t1"), 2.5);
}

TEST(PipelineLedger, AStaleAnswerChangesNothing) {
  pipeline_ledger l(options());
  auto d = of(running_group(l, 1), ledger_action::dispatch).front();
  EXPECT_TRUE(l.answered(d.candidate_id, d.ticket + 100, with(l, d.candidate_id, "compile")).empty());
  EXPECT_EQ(l.counts().stale_answers, 1);
  EXPECT_FALSE(l.candidate_of(d.candidate_id)->compiled.ok);
  // The dispatch fails (a timeout) and is sent again: the first dispatch's late answer is stale too.
  auto retry = l.failed(d.candidate_id, d.ticket, "timeout");
  EXPECT_TRUE(only(retry, ledger_action::dispatch).later);
  auto again = only(l.dispatch(d.candidate_id), ledger_action::dispatch);
  EXPECT_NE(again.ticket, d.ticket);
  EXPECT_TRUE(l.answered(d.candidate_id, d.ticket, with(l, d.candidate_id, "compile")).empty());
  EXPECT_EQ(l.counts().stale_answers, 2);
  EXPECT_FALSE(l.answered(again.candidate_id, again.ticket, with(l, again.candidate_id, "compile")).empty());
  // An answer to a stage already answered is stale as well.
  EXPECT_TRUE(l.answered(again.candidate_id, again.ticket, with(l, again.candidate_id, "compile")).empty());
  EXPECT_EQ(l.counts().stale_answers, 3);
  EXPECT_EQ(l.counts().redispatched, 1);
}

TEST(PipelineLedger, AStageThatKeepsFailingScoresTheCandidateAsAnErrorWithTheReason) {
  pipeline_ledger l(options());
  auto d = of(running_group(l, 1), ledger_action::dispatch).front();
  d = only(l.answered(d.candidate_id, d.ticket, with(l, d.candidate_id, "compile")), ledger_action::dispatch);
  l.failed(d.candidate_id, d.ticket, "worker died");
  auto second = only(l.dispatch(d.candidate_id), ledger_action::dispatch);
  EXPECT_EQ(second.stage, "benchmark");
  auto end = l.failed(second.candidate_id, second.ticket, "worker died again");
  EXPECT_EQ(only(end, ledger_action::progress).stage, stage_scored);
  EXPECT_FALSE(only(end, ledger_action::store).partial);
  const auto& v = l.candidate_of(d.candidate_id)->judged;
  EXPECT_EQ(v.outcome, "error");
  bool reason = false;
  for (const auto& e : v.evidence)
    reason |= e.find("stage benchmark failed 2 times, last: worker died again") != std::string::npos;
  EXPECT_TRUE(reason);
  EXPECT_EQ(l.counts().scored, 1);
  EXPECT_EQ(l.counts().redispatched, 1);
}

TEST(PipelineLedger, AStageNobodyServesWaitsWithoutSpendingAttempts) {
  pipeline_ledger l(options());
  auto d = of(running_group(l, 1), ledger_action::dispatch).front();
  for (int i = 0; i < 5; ++i) {
    auto wait = only(l.unserved(d.candidate_id, d.ticket), ledger_action::dispatch);
    EXPECT_TRUE(wait.later);
    d = only(l.dispatch(d.candidate_id), ledger_action::dispatch);
  }
  l.failed(d.candidate_id, d.ticket, "x");  // the first real attempt failed: one more is allowed
  d = only(l.dispatch(d.candidate_id), ledger_action::dispatch);
  EXPECT_EQ(d.stage, "compile");
  EXPECT_EQ(l.counts().scored, 0);
}

TEST(PipelineLedger, WithoutAnArtifactTheBenchmarkIsSkippedAndTheVerifierSaysWhy) {
  pipeline_ledger l(options());
  auto d = of(running_group(l, 1), ledger_action::dispatch).front();
  auto cmds = l.answered(d.candidate_id, d.ticket, with(l, d.candidate_id, "compile", false));
  auto notes = of(cmds, ledger_action::progress);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].stage, "benchmark");
  EXPECT_EQ(notes[1].stage, "verify");
  EXPECT_EQ(only(cmds, ledger_action::dispatch).stage, "verify");
  EXPECT_EQ(l.candidate_of(d.candidate_id)->bench.error, "not compiled");
}

TEST(PipelineLedger, GenerationIsRetriedThenTheGroupIsDroppedAndReplaced) {
  pipeline_ledger l(options());
  auto gid = only(l.fill(), ledger_action::generate).group_id;
  EXPECT_TRUE(only(l.generate_failed(gid, "x"), ledger_action::generate).later);
  EXPECT_EQ(only(l.regenerate(gid), ledger_action::generate).group_id, gid);
  auto next = only(l.generate_failed(gid, "x"), ledger_action::generate);
  EXPECT_NE(next.group_id, gid);
  EXPECT_FALSE(next.later);
  // An empty group is dropped too; a late answer for a dropped group changes nothing.
  auto replaced = only(l.generated(next.group_id, {}), ledger_action::generate);
  EXPECT_TRUE(l.generated(gid, batch(gid, "t1", 2)).empty());
  EXPECT_EQ(l.counts().generated, 0);
  EXPECT_EQ(l.groups(), 1u);
  EXPECT_NE(replaced.group_id, next.group_id);
}

TEST(PipelineLedger, AStopWaitsForWorkInFlightThenAnswers) {
  pipeline_ledger l(options());
  std::string gid;
  auto d = of(running_group(l, 1, &gid), ledger_action::dispatch).front();
  EXPECT_TRUE(l.stop().empty());
  EXPECT_TRUE(l.stopping());
  auto end = run_through(l, d);
  EXPECT_EQ(only(end, ledger_action::store).group_id, gid);
  auto after = l.stored(gid);
  EXPECT_TRUE(of(after, ledger_action::generate).empty());  // no new group while stopping
  only(after, ledger_action::stopped);
  EXPECT_EQ(l.counts().abandoned, 0);
  pipeline_ledger idle(options());
  only(idle.stop(), ledger_action::stopped);  // nothing in flight: the stop is answered at once
}

TEST(PipelineLedger, WhenTheGraceIsOverUnfinishedCandidatesAreStoredAsAbandoned) {
  pipeline_ledger l(options(3));
  auto open = l.fill();
  auto gens = of(open, ledger_action::generate);
  l.generated(gens[0].group_id, batch(gens[0].group_id, "t1", 2));  // being recorded
  l.generated(gens[1].group_id, batch(gens[1].group_id, "t2", 2));
  auto d = of(l.recorded(gens[1].group_id), ledger_action::dispatch);  // running
  auto done = run_through(l, d[0]);                                    // one member scored
  l.stop();
  auto cmds = l.grace_over();
  auto stores = of(cmds, ledger_action::store);
  ASSERT_EQ(stores.size(), 2u);
  for (const auto& s : stores) EXPECT_TRUE(s.partial);
  EXPECT_TRUE(of(cmds, ledger_action::stopped).empty());  // not before they are stored
  EXPECT_EQ(l.counts().abandoned, 3);
  EXPECT_EQ(l.counts().scored, 1);
  EXPECT_EQ(l.counts().in_flight(), 0);
  auto g = l.group_of(gens[1].group_id, true);
  EXPECT_EQ(g.members[0].judged.outcome, "pass");
  EXPECT_EQ(g.members[1].judged.outcome, "abandoned");
  // The abandoned member's answer arrives late: it changes nothing.
  EXPECT_TRUE(l.answered(d[1].candidate_id, d[1].ticket, with(l, d[1].candidate_id, "compile")).empty());
  EXPECT_TRUE(l.recorded(gens[0].group_id).empty());
  EXPECT_TRUE(l.stored(gens[0].group_id).size() == 0);
  only(l.stored(gens[1].group_id), ledger_action::stopped);
  EXPECT_EQ(l.groups(), 0u);  // the group still generating (gens[2]) had nothing to lose
}

struct temp_db {
  fs::path dir = fs::temp_directory_path() / ("crucible-ledger-" + std::to_string(::getpid()));
  temp_db() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~temp_db() { fs::remove_all(dir); }
  std::string path() const { return (dir / "replay.sqlite").string(); }
};

// A ledger and its database, as the conductor and the replay buffer keep them.
void record(replay_store& store, const pipeline_ledger& l, const ledger_commands& cmds) {
  for (const auto& c : cmds)
    if (c.action == ledger_action::record || c.action == ledger_action::progress)
      ASSERT_TRUE(store.record(l.record_of(c.group_id, c.candidate_ids)));
}

TEST(PipelineLedger, AHeadRestartedOnItsDatabaseResumesEveryCandidateFromItsStage) {
  temp_db db;
  std::string gid;
  std::vector<ledger_command> first;
  {
    auto store = replay_store::open(db.path(), {}, 1);
    ASSERT_TRUE(store) << store.message();
    pipeline_ledger l(options());
    auto gen = only(l.fill(), ledger_action::generate);
    gid = gen.group_id;
    auto rec = l.generated(gid, batch(gid, "t1", 3));
    record(*store, l, rec);
    first = of(l.recorded(gid), ledger_action::dispatch);
    // Member 0 compiled; member 1 scored (a pass at 4x); member 2 never answered. Then the head is killed.
    auto a = l.answered(first[0].candidate_id, first[0].ticket, with(l, first[0].candidate_id, "compile"));
    record(*store, l, a);
    ledger_command d = first[1];
    while (true) {
      auto cmds = l.answered(d.candidate_id, d.ticket, with(l, d.candidate_id, d.stage, true, 4.0));
      record(*store, l, cmds);
      auto next = of(cmds, ledger_action::dispatch);
      if (next.empty()) break;
      d = next.front();
    }
    EXPECT_EQ(store->candidates_total(), 0);  // nothing is scored-and-stored yet
  }
  auto store = replay_store::open(db.path(), {}, 1);
  ASSERT_TRUE(store) << store.message();
  auto in_flight = store->in_flight();
  ASSERT_EQ(in_flight.size(), 1u);
  EXPECT_EQ(in_flight[0].stages, (std::vector<std::string>{"benchmark", stage_scored, "compile"}));
  auto o = options();
  o.incarnation = "r1";
  pipeline_ledger l(o);
  auto cmds = l.restore(in_flight, {{"t2", 1.7}});
  auto d = of(cmds, ledger_action::dispatch);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].candidate_id, gid + "-0");
  EXPECT_EQ(d[0].stage, "benchmark");
  EXPECT_TRUE(l.candidate_of(gid + "-0")->compiled.ok);
  EXPECT_EQ(d[1].candidate_id, gid + "-2");
  EXPECT_EQ(d[1].stage, "compile");
  EXPECT_EQ(l.counts().restored, 3);
  EXPECT_EQ(l.counts().scored, 1);
  EXPECT_DOUBLE_EQ(l.best("t1"), 4.0);  // the whole run's bests: the scored member's and the database's
  EXPECT_DOUBLE_EQ(l.best("t2"), 1.7);
  // The restored group holds the one slot in flight; new groups come after it, under the new incarnation.
  EXPECT_TRUE(l.fill().empty());
  run_through(l, d[0]);
  auto end = run_through(l, d[1]);
  EXPECT_EQ(only(end, ledger_action::store).group_id, gid);
  auto stored_group = l.group_of(gid, false);
  EXPECT_EQ(only(l.stored(gid), ledger_action::generate).group_id.rfind("r1-g", 0), 0u);
  auto r = store->insert(stored_group);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->inserted, 3);
  EXPECT_TRUE(store->in_flight().empty());
  EXPECT_EQ(store->candidates_total(), 3);
  EXPECT_EQ(store->pending_groups(), 1u);
  auto summary = replay_store::summarize(db.path());
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->candidates, 3);
  EXPECT_EQ(summary->outcomes.count("pending"), 0u);
  EXPECT_EQ(summary->outcomes.at("pass"), 3);
}

TEST(PipelineLedger, ARestoredGroupThatWasCompleteIsStoredAndOneWhoseTaskIsGoneIsAbandoned) {
  pipeline_ledger l(options());
  scored_group done;
  done.group_id = "r0-g7";
  done.task = "t1";
  for (const auto& c : batch("r0-g7", "t1", 2)) {
    scored_candidate s;
    s.cand = c;
    s.judged.outcome = "pass";
    s.judged.reward = 0.5;
    done.members.push_back(s);
    done.stages.push_back(stage_scored);
  }
  scored_group gone = done;
  gone.group_id = "r0-g8";
  gone.task = "t9";
  gone.stages = {"benchmark", "compile"};
  for (auto& m : gone.members) m.cand.task = "t9", m.cand.id = "r0-g8" + m.cand.id.substr(5);
  scored_group moved = done;
  moved.group_id = "r0-g9";
  moved.stages = {"lint", stage_scored};  // a stage this pipeline does not have
  for (auto& m : moved.members) m.cand.id = "r0-g9" + m.cand.id.substr(5);
  moved.members[0].compiled.ok = true;
  auto cmds = l.restore({done, gone, moved}, {});
  auto stores = of(cmds, ledger_action::store);
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_FALSE(stores[0].partial);  // r0-g7: every member scored before the kill
  EXPECT_TRUE(stores[1].partial);   // r0-g8: its task is not in this run
  EXPECT_DOUBLE_EQ(l.group_of("r0-g7", false).members[0].reward, 0.5);
  const auto& v = l.candidate_of("r0-g8-0")->judged;
  EXPECT_EQ(v.outcome, "abandoned");
  EXPECT_NE(v.evidence.back().find("t9"), std::string::npos);
  const auto& d = only(cmds, ledger_action::dispatch);
  EXPECT_EQ(d.candidate_id, "r0-g9-0");
  EXPECT_EQ(d.stage, "compile");  // the whole pipeline again, its earlier results dropped
  EXPECT_FALSE(l.candidate_of("r0-g9-0")->compiled.ok);
  EXPECT_EQ(l.counts().restored, 6);
  EXPECT_EQ(l.counts().abandoned, 2);
  EXPECT_EQ(l.counts().scored, 3);
  EXPECT_EQ(l.counts().in_flight(), 1);
  EXPECT_TRUE(l.restore({done}, {}).empty());  // a group already taken over is not taken twice
}

}  // namespace
}  // namespace crucible::runtime
