#include "runtime/storage/run_kernels.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/pipeline/training_stages.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

scored_candidate member(const std::string& id, const std::string& task, const std::string& outcome,
                        double speedup) {
  scored_candidate s;
  s.cand.id = id;
  s.cand.group_id = "g-" + id;
  s.cand.task = task;
  s.cand.language = "cpp";
  s.cand.program = "tile 32";
  s.cand.source = "// kernel " + id + "\n";
  s.judged.outcome = outcome;
  s.judged.speedup = speedup;
  s.reward = speedup;
  s.bench.notes = {"checks: 4 of 21 timed trials checked"};
  return s;
}

void store(const fs::path& db, const std::vector<scored_candidate>& members) {
  auto st = replay_store::open(db.string(), {}, 1);
  ASSERT_TRUE(st) << st.message();
  for (const auto& m : members) {
    scored_group g;
    g.group_id = m.cand.group_id;
    g.task = m.cand.task;
    g.members = {m};
    ASSERT_TRUE(st->insert(g));
  }
}

fs::path fresh(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("crucible-kernels-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Only verified candidates compete; the fastest wins, the earliest on a tie; a task with none is left out.
TEST(RunKernels, EachTasksBestIsItsFastestVerifiedCandidate) {
  std::vector<scored_candidate> all = {member("a1", "a", "pass", 1.5), member("a2", "a", "hack", 9.0),
                                       member("a3", "a", "pass", 2.0), member("a4", "a", "pass", 2.0),
                                       member("b1", "b", "incorrect", 0.0)};
  auto best = best_per_task(all);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].cand.id, "a3");
}

// A staged run keeps a database per stage: all of them are read, the sft stage's corpus first.
TEST(RunKernels, AStagedRunIsReadStageByStage) {
  auto dir = fresh("staged");
  fs::create_directories(fs::path(stage_dir(dir.string(), training_stage::sft)) / "corpus");
  fs::create_directories(stage_dir(dir.string(), training_stage::contrastive));
  store(fs::path(stage_dir(dir.string(), training_stage::sft)) / "corpus" / "replay.sqlite",
        {member("s1", "a", "pass", 1.2)});
  store(fs::path(stage_dir(dir.string(), training_stage::contrastive)) / "replay.sqlite",
        {member("c1", "a", "pass", 1.8)});
  auto all = run_candidates(dir.string());
  ASSERT_TRUE(all) << all.message();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].cand.id, "s1");
  EXPECT_EQ(best_per_task(*all).at(0).cand.id, "c1");
  auto none = run_candidates(fresh("empty").string());
  ASSERT_FALSE(none);
  EXPECT_NE(none.message().find("no replay database"), std::string::npos) << none.message();
  EXPECT_FALSE(run_candidates("/nonexistent/run"));
}

// Export: the source as it was generated, and a sidecar with the measurements, the verdict and the origin.
TEST(RunKernels, ExportWritesTheBestSourceBesideItsSidecar) {
  auto dir = fresh("export");
  auto odd = member("x1", "../odd name", "pass", 3.0);
  odd.cand.language = "cu";
  store(dir / "replay.sqlite", {member("a1", "a", "pass", 1.5), member("a2", "a", "pass", 2.5), odd});
  auto out = dir / "best";
  auto written = export_best(dir.string(), out.string());
  ASSERT_TRUE(written) << written.message();
  ASSERT_EQ(written->size(), 2u);
  EXPECT_EQ(read(out / "a.cpp"), "// kernel a2\n");
  auto side = nlohmann::json::parse(read(out / "a.json"));
  EXPECT_EQ(side["candidate_id"], "a2");
  EXPECT_EQ(side["verdict"]["outcome"], "pass");
  EXPECT_DOUBLE_EQ(side["verdict"]["speedup"].get<double>(), 2.5);
  EXPECT_EQ(side["program"], "tile 32");
  EXPECT_EQ(side["group_id"], "g-a2");
  EXPECT_FALSE(side.contains("source"));
  // A task name never leaves the folder nor hides a file.
  EXPECT_EQ(kernel_file_name(odd), "_._odd_name.cu");
  EXPECT_TRUE(fs::exists(out / "_._odd_name.cu"));
}

TEST(RunKernels, ACandidateInFullHasItsVerdictNotesProgramAndSource) {
  auto text = format_candidate(member("a2", "a", "pass", 2.5));
  for (const char* want :
       {"candidate  a2 (group g-a2", "verdict    pass, 2.50x vs eager",
        "checks: 4 of 21 timed trials checked", "program\n  tile 32", "source (cpp)\n  // kernel a2"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
}

}  // namespace
}  // namespace crucible::runtime
