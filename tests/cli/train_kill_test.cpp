// A head killed with SIGKILL at chosen moments of a run, then resumed: every candidate it had generated is
// accounted for exactly once (scored, or stored as abandoned; none left pending, none stored twice), the
// resumed run trains to its last step, and metrics.jsonl has one line per step.
//
// The moments are fail points (runtime/hosting/fail_points.hpp), reached by progress, not by time: the Nth
// time the head passes a point it dies, whatever the machine's speed. N is drawn per point from a seed
// (CRUCIBLE_KILL_SEED, printed with every failure) within the range every run of this size reaches.
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

const int64_t max_steps = 4;

std::string run_flags(const std::string& dir) {
  std::string flags;
  for (const char* s :
       {"run.max_steps=4", "run.max_minutes=8", "run.progress=false", "run.log_level=info",
        "run.checkpoint_every=2", "tasks.include=[bias_gelu]", "learner.group_size=4",
        "learner.groups_per_step=1", "async.groups_in_flight=2", "benchmark.seeds=2",
        "benchmark.input_sets=2", "benchmark.warmup=1", "benchmark.buckets=2", "benchmark.trials=1",
        "benchmark.timeout_s=60", "policy.d_model=32", "policy.layers=1", "policy.heads=2"})
    flags += std::string(" --set ") + s;
  return flags + " --set run.dir=" + dir;
}

crucible::test::command_result crucible(const std::string& env, const std::string& args) {
  // The shell reports a signal's end as 128 + its number: `exit=137` is a SIGKILL.
  auto r = crucible::test::run_command(env + " " + std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args +
                                       " 2>&1; echo \"exit=$?\"");
  auto at = r.out.rfind("exit=");
  r.exit_code = at == std::string::npos ? -1 : std::atoi(r.out.c_str() + at + 5);
  return r;
}

struct database_view {
  std::map<std::string, std::string> outcome;  // candidate id -> outcome
  std::map<std::string, std::string> group_of;
  std::map<std::string, std::string> group_state;
};

database_view read_database(const std::string& path) {
  database_view v;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return v;
  }
  auto text = [](sqlite3_stmt* s, int i) {
    const auto* p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  };
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT id, outcome, group_id FROM candidates", -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW) {
      v.outcome[text(s, 0)] = text(s, 1);
      v.group_of[text(s, 0)] = text(s, 2);
    }
  sqlite3_finalize(s);
  if (sqlite3_prepare_v2(db, "SELECT group_id, state FROM groups", -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW) v.group_state[text(s, 0)] = text(s, 1);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

std::vector<int64_t> metric_steps(const std::string& path) {
  std::vector<int64_t> steps;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    steps.push_back(j.is_object() && j.contains("step") ? j["step"].get<int64_t>() : -1);
  }
  return steps;
}

struct kill_point {
  const char* name;
  int most;  // every run of this size passes the point at least this many times
};

// Each the head passes, with how often a 4-step run of groups of 4 (two in flight) surely passes it.
const kill_point points[] = {
    {"conductor.generated", 4},  // a group back from the generator, not yet recorded
    {"conductor.dispatch", 40},  // a stage sent, its answer not in
    {"conductor.answered", 40},  // a stage answered, the move not yet recorded
    {"conductor.scored", 4},     // a group complete, not yet stored
    {"replay.record", 40},       // inside the transaction that records candidates in flight
    {"replay.insert", 4},        // inside the transaction that stores a scored group
    {"learner.step", 4},         // a step trained and logged, its checkpoint not written
    {"checkpoint.written", 2},   // mid-checkpoint: the file written, LATEST not yet moved to it
};

void PrintTo(const kill_point& p, std::ostream* os) {
  *os << p.name;
}

unsigned kill_seed() {
  const char* s = std::getenv("CRUCIBLE_KILL_SEED");
  return s ? static_cast<unsigned>(std::strtoul(s, nullptr, 10)) : 20261202u;
}

class TrainKill : public ::testing::TestWithParam<kill_point> {};

TEST_P(TrainKill, AHeadKilledThereResumesWithEveryCandidateAccountedForOnce) {
  const kill_point p = GetParam();
  std::mt19937 rng(kill_seed() + static_cast<unsigned>(std::hash<std::string>{}(p.name)));
  int hit = std::uniform_int_distribution<int>(1, p.most)(rng);
  std::string at = std::string(p.name) + ":" + std::to_string(hit);
  SCOPED_TRACE("killed at " + at + " (CRUCIBLE_KILL_SEED=" + std::to_string(kill_seed()) + ")");
  std::string dir = crucible::test::fresh_temp_dir(std::string("kill-") + p.name);
  fs::create_directories(fs::path(dir).parent_path());

  auto killed = crucible("CRUCIBLE_FAIL_POINT=" + at, "train" + run_flags(dir));
  ASSERT_EQ(killed.exit_code, 137) << "the run was not killed at " << at << ":\n" << killed.out;
  auto before = read_database(dir + "/replay.sqlite");
  auto steps_before = metric_steps(dir + "/metrics.jsonl");

  auto resumed = crucible("", "train --resume " + dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find(", 0 lost,"), std::string::npos) << resumed.out;
  auto after = read_database(dir + "/replay.sqlite");

  // Every candidate the killed head had recorded is still there, in the same group, and none is pending.
  for (const auto& [id, outcome] : before.outcome) {
    ASSERT_TRUE(after.outcome.count(id)) << id << " (" << outcome << " at the kill) vanished";
    EXPECT_EQ(after.group_of.at(id), before.group_of.at(id));
    if (outcome != "pending") EXPECT_EQ(after.outcome.at(id), outcome) << id << " was scored twice";
  }
  for (const auto& [id, outcome] : after.outcome)
    EXPECT_NE(outcome, "pending") << id << " was left in flight";
  for (const auto& [gid, state] : after.group_state) EXPECT_NE(state, "in_flight") << gid;
  for (const auto& [id, gid] : after.group_of) EXPECT_TRUE(after.group_state.count(gid)) << id;
  int64_t pending_before = 0;
  for (const auto& [id, outcome] : before.outcome) pending_before += outcome == "pending";
  std::printf("killed at %s: %lld of %zu candidates in flight, %zu metric lines; resumed\n", at.c_str(),
              static_cast<long long>(pending_before), before.outcome.size(), steps_before.size());
  if (pending_before > 0) {
    EXPECT_NE(resumed.out.find(std::to_string(pending_before) + " taken over from the run it resumes"),
              std::string::npos)
        << resumed.out;
  }

  // One metrics line per step, 1 to max_steps, in order: the steps the kill undid were trained again.
  auto steps = metric_steps(dir + "/metrics.jsonl");
  std::vector<int64_t> want;
  for (int64_t s = 1; s <= max_steps; ++s) want.push_back(s);
  EXPECT_EQ(steps, want) << "before the resume: " << testing::PrintToString(steps_before);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(AtEachPoint, TrainKill, ::testing::ValuesIn(points),
                         [](const testing::TestParamInfo<kill_point>& info) {
                           std::string name = info.param.name;
                           for (auto& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

}  // namespace
