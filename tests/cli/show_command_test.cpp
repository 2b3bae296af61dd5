// `crucible show` and `crucible export` as a user runs them, over a replay database written here.
#include <filesystem>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "runtime/storage/replay_store.hpp"
#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using crucible::scored_candidate;

crucible::test::command_result run(const std::string& args) {
  return crucible::test::run_command(std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args + " 2>&1");
}

// Task a: a hack (fastest, never shown as best), a pass at 1.5x, a pass at 2.5x; task b: only incorrect.
std::string run_dir() {
  const std::string dir = crucible::test::fresh_temp_dir("show");
  fs::create_directories(dir);
  auto store = crucible::runtime::replay_store::open(dir + "/replay.sqlite", {}, 1);
  EXPECT_TRUE(store) << store.message();
  int n = 0;
  for (auto [task, outcome, speedup] : {std::tuple{"a", "hack", 9.0}, std::tuple{"a", "pass", 1.5},
                                        std::tuple{"a", "pass", 2.5}, std::tuple{"b", "incorrect", 0.0}}) {
    scored_candidate s;
    s.cand.id = std::string(task) + std::to_string(++n);
    s.cand.group_id = "g" + std::to_string(n);
    s.cand.task = task;
    s.cand.source = "// source of " + s.cand.id + "\n";
    s.judged.outcome = outcome;
    s.judged.speedup = speedup;
    if (std::string(outcome) == "hack") s.judged.flags = {"input_mutated:x"};
    crucible::scored_group g;
    g.group_id = s.cand.group_id;
    g.task = task;
    g.members = {s};
    EXPECT_TRUE(store->insert(g));
  }
  return dir;
}

TEST(ShowCommand, ListsTasksShowsTheBestAndACandidateInFull) {
  const std::string dir = run_dir();
  auto table = run("show " + dir);
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("2.500x  a3"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("0.000x  -"), std::string::npos) << "b has no verified candidate\n" << table.out;

  auto best = run("show " + dir + " --best");
  ASSERT_EQ(best.exit_code, 0) << best.out;
  EXPECT_NE(best.out.find("candidate  a3"), std::string::npos) << best.out;
  EXPECT_NE(best.out.find("// source of a3"), std::string::npos) << best.out;
  EXPECT_EQ(best.out.find("a1"), std::string::npos) << "the hack is never a best\n" << best.out;

  auto task = run("show " + dir + " --task a");
  ASSERT_EQ(task.exit_code, 0) << task.out;
  EXPECT_NE(task.out.find("hack"), std::string::npos) << task.out;
  EXPECT_NE(task.out.find("a2"), std::string::npos) << task.out;

  auto one = run("show " + dir + " --candidate a1 --json");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  auto j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j["verdict"]["flags"][0], "input_mutated:x");
  EXPECT_EQ(j["source"], "// source of a1\n");
}

TEST(ShowCommand, UnknownRunsCandidatesAndTasksAreClearErrors) {
  const std::string dir = run_dir();
  auto missing = run("show " + dir + " --candidate zz");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("no candidate 'zz'"), std::string::npos) << missing.out;
  auto task = run("show " + dir + " --task nope");
  EXPECT_EQ(task.exit_code, 2);
  EXPECT_NE(task.out.find("no candidate of task 'nope'"), std::string::npos) << task.out;
  auto unverified = run("show " + dir + " --task b --best");
  EXPECT_EQ(unverified.exit_code, 1);
  EXPECT_NE(unverified.out.find("no verified candidate of b"), std::string::npos) << unverified.out;
  auto nothing = run("show /nonexistent/run");
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.out.find("no run directory"), std::string::npos) << nothing.out;
}

TEST(ExportCommand, WritesEachTasksBestWithASidecar) {
  const std::string dir = run_dir();
  auto r = run("export " + dir + " " + dir + "/best");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 kernels written"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/best/a.cpp"));
  EXPECT_TRUE(fs::exists(dir + "/best/a.json"));
  EXPECT_FALSE(fs::exists(dir + "/best/b.cpp"));
}

}  // namespace
