// End-to-end runs of the whole actor pipeline on the CPU target, small enough for CI: every actor does its
// real job (policy sampling, g++, the isolated worker, the verifier, SQLite, GRPO). They check the ledger:
// every generated candidate is scored exactly once, also when workers and actors are killed mid-run.
#include "runtime/hosting/train_session.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <sqlite3.h>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "actors/options/benchmark_section.hpp"
#include "actors/roles.hpp"
#include "messages/type_ids.hpp"
#include "runtime/config/config.hpp"
#include "runtime/storage/checkpoints.hpp"
#include "runtime/storage/tensorboard_log.hpp"

namespace crucible {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

runtime::config small_config(const std::string& dir, int64_t steps) {
  auto cfg = runtime::parse_config(
      runtime::embedded_default_config(),
      {"run.dir=" + dir, "run.max_steps=" + std::to_string(steps), "run.max_minutes=8", "run.progress=false",
       "run.log_level=warn", "run.checkpoint_every=2", "tasks.include=[bias_gelu, swiglu_gate]",
       "learner.group_size=4", "learner.groups_per_step=1", "async.groups_in_flight=2", "benchmark.seeds=2",
       "benchmark.input_sets=2", "benchmark.warmup=1", "benchmark.buckets=2", "benchmark.trials=1",
       "benchmark.timeout_s=60", "policy.d_model=32", "policy.layers=1", "policy.heads=2"},
      "test");
  EXPECT_TRUE(cfg) << cfg.message();
  cfg->section<actors::benchmark_section>().worker.worker_path =
      std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";
  return *cfg;
}

std::shared_ptr<runtime::role_registry> builtin_registry() {
  auto r = std::make_shared<runtime::role_registry>();
  actors::register_builtin_roles(*r);
  return r;
}

struct db_counts {
  int64_t candidates = 0;
  int64_t distinct = 0;
  int64_t retried = 0;  // candidates whose benchmark needed a second worker
  int64_t crashes = 0;
  int64_t abandoned = 0;
};

db_counts count_db(const std::string& path) {
  db_counts out;
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return out;
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  };
  out.candidates = scalar("SELECT COUNT(*) FROM candidates");
  out.distinct = scalar("SELECT COUNT(DISTINCT id) FROM candidates");
  out.crashes = scalar("SELECT COUNT(*) FROM candidates WHERE outcome = 'crash'");
  out.abandoned = scalar(
      "SELECT COUNT(*) FROM candidates c JOIN groups g ON g.group_id = c.group_id "
      "WHERE c.outcome = 'abandoned' AND g.state = 'partial'");
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT record FROM candidates", -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string blob(static_cast<const char*>(sqlite3_column_blob(s, 0)), sqlite3_column_bytes(s, 0));
    if (auto rec = decode_as<scored_candidate>(blob); rec && rec->bench.attempts > 1) ++out.retried;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

std::vector<nlohmann::json> metrics_lines(const std::string& dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The TensorBoard event files of RUN_DIR/tb, oldest first, each read back with its framing and CRCs checked.
std::vector<std::vector<runtime::tensorboard_event>> tensorboard_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(dir + "/tb")) files.push_back(f.path().string());
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return fs::last_write_time(a) < fs::last_write_time(b);
  });
  std::vector<std::vector<runtime::tensorboard_event>> out;
  for (const auto& f : files) {
    auto events = runtime::read_tensorboard_events(f);
    EXPECT_TRUE(events) << events.message();
    if (events) out.push_back(*events);
  }
  return out;
}

float scalar(const runtime::tensorboard_event& e, const std::string& tag) {
  for (const auto& [t, v] : e.scalars)
    if (t == tag) return v;
  ADD_FAILURE() << "no scalar " << tag << " at step " << e.step;
  return -1;
}

void expect_every_candidate_scored_once(const runtime::train_summary& s, const std::string& dir) {
  const auto& c = s.conductor;
  EXPECT_GT(c.candidates_generated, 0);
  EXPECT_EQ(c.candidates_in_flight, 0) << "candidates neither scored nor recorded as abandoned";
  EXPECT_EQ(c.candidates_generated, c.candidates_scored + c.candidates_abandoned);
  auto db = count_db(dir + "/replay.sqlite");
  EXPECT_EQ(db.candidates, db.distinct);
  EXPECT_EQ(db.candidates, c.candidates_generated) << "generated candidates missing from the replay buffer";
}

struct temp_run {
  std::string dir;
  explicit temp_run(const std::string& name)
      : dir((fs::temp_directory_path() / ("crucible-" + name + "-" + std::to_string(::getpid()))).string()) {
    fs::remove_all(dir);
  }
  ~temp_run() {
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  }
};

TEST(TrainSession, RunsEndToEndThenResumes) {
  temp_run run("e2e");
  auto first = small_config(run.dir, 3);
  first.run.shutdown_grace_s = 0.5;  // the group still in flight at the end is cut short: abandoned, not lost
  auto ctx = runtime::prepare_run(first, false);
  ASSERT_TRUE(ctx) << ctx.message();
  auto s = runtime::run_training(*ctx, builtin_registry());
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(s->steps, 3);
  expect_every_candidate_scored_once(*s, run.dir);
  auto lines = metrics_lines(run.dir);
  ASSERT_EQ(lines.size(), 3u);
  for (const char* key : {"step", "policy_version", "reward_mean", "correct_rate", "flagged_rate",
                          "speedup_mean", "candidates", "staleness_mean", "wall_s", "speedup_best"})
    EXPECT_TRUE(lines.back().contains(key)) << key;
  EXPECT_EQ(lines.back()["policy_version"].get<int64_t>(), 3);
  EXPECT_GT(lines.back()["correct_rate"].get<double>(), 0.5) << "emitted programs should mostly be correct";
  EXPECT_TRUE(fs::exists(run.dir + "/checkpoints/LATEST"));
  if (s->conductor.candidates_abandoned > 0) {
    auto abandoned = count_db(run.dir + "/replay.sqlite").abandoned;
    EXPECT_EQ(abandoned, s->conductor.candidates_abandoned);
  }

  auto resumed_cfg = runtime::load_run_config(run.dir, {"run.max_steps=5"});
  ASSERT_TRUE(resumed_cfg) << resumed_cfg.message();
  resumed_cfg->section<actors::benchmark_section>().worker.worker_path =
      std::string(CRUCIBLE_BINARY_DIR) + "/crucible-eval-worker";
  auto ctx2 = runtime::prepare_run(*resumed_cfg, true);
  ASSERT_TRUE(ctx2) << ctx2.message();
  auto s2 = runtime::run_training(*ctx2, builtin_registry());
  ASSERT_TRUE(s2) << s2.message();
  EXPECT_EQ(s2->steps, 5);
  lines = metrics_lines(run.dir);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3]["step"].get<int64_t>(), 4) << "a resumed run continues the step count";
  EXPECT_EQ(lines[4]["policy_version"].get<int64_t>(), 5);
  auto db = count_db(run.dir + "/replay.sqlite");
  EXPECT_EQ(db.candidates, db.distinct);
  EXPECT_EQ(db.candidates, s->conductor.candidates_generated + s2->conductor.candidates_generated);

  // TensorBoard has the same steps: one event file per run, the resumed one opening with a START at step 4.
  auto tb = tensorboard_files(run.dir);
  ASSERT_EQ(tb.size(), 2u);
  ASSERT_EQ(tb[0].size(), 4u);  // the file version, then steps 1 to 3
  EXPECT_EQ(tb[0][0].file_version, "brain.Event:2");
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(tb[0][i].step, i);
    EXPECT_FLOAT_EQ(scalar(tb[0][i], "reward_mean"), lines[i - 1]["reward_mean"].get<float>());
    EXPECT_FLOAT_EQ(scalar(tb[0][i], "correct_rate"), lines[i - 1]["correct_rate"].get<float>());
  }
  ASSERT_EQ(tb[1].size(), 4u);  // the file version, START, steps 4 and 5
  EXPECT_EQ(tb[1][1].session_status, 1);
  EXPECT_EQ(tb[1][1].step, 4);
  EXPECT_EQ(tb[1][3].step, 5);
  for (const auto& [task, best] : lines[4]["speedup_best"].items())
    EXPECT_FLOAT_EQ(scalar(tb[1][3], "speedup_best/" + task), best.get<float>());
}

TEST(TrainSession, InterruptStopsCleanlyWithACheckpoint) {
  temp_run run("interrupt");
  auto ctx = runtime::prepare_run(small_config(run.dir, 50), false);
  ASSERT_TRUE(ctx) << ctx.message();
  // What Ctrl-C does (the SIGINT handler calls the same function), once the first step is through.
  std::thread interrupter([dir = run.dir] {
    for (int i = 0; i < 600 && !fs::exists(dir + "/metrics.jsonl"); ++i) std::this_thread::sleep_for(100ms);
    runtime::request_stop();
  });
  auto s = runtime::run_training(*ctx, builtin_registry());
  interrupter.join();
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(s->interrupted);
  EXPECT_GE(s->steps, 1);
  EXPECT_LT(s->steps, 50);
  expect_every_candidate_scored_once(*s, run.dir);
  auto latest = runtime::load_latest_checkpoint(run.dir + "/checkpoints");
  ASSERT_TRUE(latest) << latest.message();
  EXPECT_EQ(latest->step, s->steps) << "the final checkpoint holds the last step";
}

// Children of this process running the eval worker.
std::vector<pid_t> worker_pids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid() && comm.rfind("crucible-eval", 0) == 0) out.push_back(pid);
  }
  closedir(d);
  return out;
}

// CPU time (user + system, in clock ticks) a process has used; -1 when it is gone.
long cpu_ticks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 of proc(5)
    if (i == 14) utime = std::atol(field.c_str());
    if (i == 15) stime = std::atol(field.c_str());
  }
  return utime + stime;
}

int64_t metrics_line_count(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// A custom role that plays chaos monkey, driven by progress rather than by a schedule, so the kills happen
// whatever the machine's speed: it SIGKILLs an eval worker that is busy (its CPU time grew since the last
// look, so an evaluation is under way) three times, then kills the benchmarker actor itself while its worker
// is busy, so the supervisor restarts it and the conductor re-dispatches. Once two more learner steps have
// been logged after that, it stops the run the way Ctrl-C does. The run cannot end before the chaos is done
// (max_steps is out of reach), and benchmark.max_attempts exceeds the kills, so a candidate whose worker was
// killed under every retry is still retried, never blamed.
struct chaos_state {
  std::map<pid_t, long> seen;  // worker pid -> CPU ticks at the last look
  int worker_kills = 0;
  bool actor_killed = false;
  int64_t steps_at_actor_kill = -1;
  bool stopped = false;
};
std::atomic<int> worker_kills{0};
std::atomic<int> actor_kills{0};
std::string chaos_run_dir;
constexpr int chaos_worker_kills = 3;

// A worker whose CPU time grew since the previous look, or 0.
pid_t busy_worker(chaos_state& st) {
  std::map<pid_t, long> now;
  pid_t busy = 0;
  for (pid_t pid : worker_pids()) {
    long t = cpu_ticks(pid);
    if (t < 0) continue;
    now[pid] = t;
    auto it = st.seen.find(pid);
    if (it != st.seen.end() && t > it->second && busy == 0) busy = pid;
  }
  st.seen = std::move(now);
  return busy;
}

caf::behavior chaos(caf::stateful_actor<chaos_state>* self, runtime::role_context ctx) {
  self->delayed_send(self, 100ms, tick_atom::value);
  return {[=](tick_atom) {
    auto& st = self->state;
    if (st.stopped) return;
    if (st.worker_kills < chaos_worker_kills) {
      if (pid_t pid = busy_worker(st); pid > 0 && ::kill(pid, SIGKILL) == 0) {
        ++st.worker_kills;
        ++worker_kills;
        st.seen.clear();  // the next victim is judged by fresh looks
      }
    } else if (!st.actor_killed) {
      if (busy_worker(st) > 0) {
        st.actor_killed = true;  // one request at a time: a failed one is not repeated
        self->request(ctx.supervisor, 5s, pool_atom::value, std::string("benchmarker"))
            .then([=](const std::vector<caf::actor>& members) {
              if (members.empty()) {
                self->state.actor_killed = false;
                return;
              }
              self->send_exit(members.front(), caf::exit_reason::kill);
              self->state.steps_at_actor_kill = metrics_line_count(chaos_run_dir);
              ++actor_kills;
            });
      }
    } else if (st.steps_at_actor_kill >= 0 &&
               metrics_line_count(chaos_run_dir) >= st.steps_at_actor_kill + 2) {
      st.stopped = true;
      runtime::request_stop();
      return;
    }
    self->delayed_send(self, 100ms, tick_atom::value);
  }};
}

TEST(TrainSession, KilledWorkersAndActorsLoseNoCandidate) {
  temp_run run("chaos");
  auto cfg = small_config(run.dir, 1000);
  cfg.run.max_minutes = 15;  // a bound for a broken run only: the chaos role ends this one
  cfg.section<actors::benchmark_section>().runner.max_attempts = chaos_worker_kills + 2;
  cfg.roles["chaos"] = 1;
  chaos_run_dir = run.dir;
  auto ctx = runtime::prepare_run(cfg, false);
  ASSERT_TRUE(ctx) << ctx.message();
  auto registry = builtin_registry();
  registry->add("chaos",
                [](caf::actor_system& sys, const runtime::role_context& c) { return sys.spawn(chaos, c); });
  auto s = runtime::run_training(*ctx, registry);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(s->interrupted) << "the run ended before the chaos role stopped it";
  EXPECT_GE(s->steps, 2);
  EXPECT_EQ(worker_kills.load(), chaos_worker_kills);
  EXPECT_EQ(actor_kills.load(), 1);
  expect_every_candidate_scored_once(*s, run.dir);
  auto db = count_db(run.dir + "/replay.sqlite");
  EXPECT_EQ(db.crashes, 0) << "a worker killed from outside must not be blamed on the candidate";
  EXPECT_GE(db.retried, 1) << "no benchmark was ever retried on a fresh worker";
  EXPECT_GE(db.retried + s->conductor.redispatched, 1) << "no candidate was ever retried";
}

}  // namespace
}  // namespace crucible
