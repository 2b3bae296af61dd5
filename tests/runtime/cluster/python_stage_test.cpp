// The Python external stage (examples/python_stage/stage.py) joins an in-process head over loopback TCP,
// pulls work with credits, heartbeats, answers verdicts, and leaves when the head asks it to drain.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "runtime/cluster/curve_keys.hpp"
#include "tests/runtime/cluster/wire_test_support.hpp"

extern char** environ;

namespace crucible::runtime {
namespace {

using namespace test;
namespace fs = std::filesystem;

// A python3 that has zmq and msgpack (Debian's python3-zmq, python3-msgpack), or empty.
std::string find_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CRUCIBLE_PYTHON")) candidates.push_back(env);
  candidates.push_back("/usr/bin/python3");
  candidates.push_back("python3");
  for (const auto& c : candidates)
    if (std::system(("'" + c + "' -c 'import zmq, msgpack' >/dev/null 2>&1").c_str()) == 0) return c;
  return {};
}

std::string script_path() {
  return (fs::path(CRUCIBLE_TEST_DATA_DIR) / ".." / ".." / "examples" / "python_stage" / "stage.py").string();
}

// The stage as a child process; its stderr goes to a log the test prints when something fails.
class stage_process {
 public:
  stage_process(const std::string& python, std::vector<std::string> args,
                const std::string& script = script_path()) {
    log_ =
        (fs::temp_directory_path() / ("crucible_py_stage_" + std::to_string(::getpid()) + ".log")).string();
    std::vector<std::string> argv = {python, "-u", script};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawnp(&pid_, python.c_str(), &actions, nullptr, raw.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
  }
  ~stage_process() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    fs::remove(log_, ec);
  }
  bool running() const { return pid_ > 0; }

  /// The exit status within `timeout`, or -1.
  int wait_exit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

  std::string log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string log_;
};

candidate make_candidate(const std::string& id, const std::string& source) {
  candidate c;
  c.id = id;
  c.task = "bias_gelu";
  c.content_hash = "hash-" + id;
  c.source = source;
  return c;
}

bench_result make_bench(const std::string& id, bool correct, double speedup) {
  bench_result b;
  b.candidate_id = id;
  b.task = "bias_gelu";
  b.correct = correct;
  b.timed = correct;
  b.speedup_vs_eager = speedup;
  b.max_abs_err = correct ? 1e-7 : 0.5;
  return b;
}

work_item verify_work(const candidate& c, const bench_result& b) {
  work_item w;
  w.role = "py_verifier";
  w.stage = "verify";
  w.payload = {encode_embedded(c, "head"), encode_embedded(b, "head")};
  return w;
}

class PythonStage : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = find_python();
    if (python_.empty())
      GTEST_SKIP() << "no python3 with the zmq and msgpack modules (Debian: apt-get install python3-zmq "
                      "python3-msgpack; or set CRUCIBLE_PYTHON)";
    ASSERT_TRUE(fs::exists(script_path())) << script_path();
  }
  std::string python_;
};

TEST_F(PythonStage, PullsWorkAnswersVerdictsHeartbeatsAndDrains) {
  wire_head_options opt;
  opt.heartbeat_interval = 200ms;
  opt.liveness = 3;
  auto head = start_head(opt);
  ASSERT_TRUE(head);
  stage_process stage(python_, {"--endpoint", head->endpoint(), "--capacity", "2", "--peer-id", "py-stage"});
  ASSERT_TRUE(stage.running());
  auto joined = wait_event<peer_joined>(*head, 15s);  // python's start-up is slow on a loaded machine
  ASSERT_TRUE(joined) << stage.log();
  EXPECT_EQ(joined->peer_id, "py-stage");
  EXPECT_EQ(joined->info.labels.at("language"), "python");
  ASSERT_EQ(joined->info.roles.size(), 1u);
  EXPECT_EQ(joined->info.roles[0].role, "py_verifier");
  auto credit = wait_event<credit_granted>(*head, 5s);
  ASSERT_TRUE(credit) << stage.log();
  EXPECT_EQ(credit->total, 2);

  // Quiet for 1.2 s, twice the liveness window: only its heartbeats keep it registered.
  std::this_thread::sleep_for(1200ms);
  ASSERT_EQ(head->peers().size(), 1u) << "the stage was declared dead: no heartbeats?\n" << stage.log();
  EXPECT_FALSE(wait_event<peer_left>(*head, 10ms));

  struct expectation {
    candidate cand;
    bench_result bench;
    std::string outcome;
    double reward;
  };
  std::vector<expectation> cases = {
      {make_candidate("c1", "int crucible_forward() { return 0; }"), make_bench("c1", true, 1.8), "pass",
       1.8},
      {make_candidate("c2", "int crucible_forward() { return 0; }"), make_bench("c2", false, 0), "incorrect",
       0.0},
      {make_candidate("c3", "#include <thread>\nstd::thread t; int crucible_forward() { return 0; }"),
       make_bench("c3", true, 9.0), "hack", -1.0},
      {make_candidate("c4", "int crucible_forward() { return 0; }"), make_bench("c4", true, 0.7), "pass",
       0.7},
      {make_candidate("c5", "clock_gettime(CLOCK_MONOTONIC, &t);"), make_bench("c5", true, 3.0), "hack",
       -1.0}};
  std::map<uint64_t, size_t> by_request;
  size_t next = 0, answered = 0;
  while (answered < cases.size()) {
    // Send only what the stage asked for: credits bound the work, exactly as for a GPU benchmarker.
    while (next < cases.size()) {
      auto d = head->dispatch(verify_work(cases[next].cand, cases[next].bench));
      if (!d) break;
      EXPECT_EQ(d->peer_id, "py-stage");
      by_request[d->request_id] = next++;
    }
    ASSERT_LE(head->peers().at(0).in_flight.size(), 2u);
    auto ev = head->next_event(5s);
    ASSERT_TRUE(ev) << "the stage stopped answering\n" << stage.log();
    auto* done = std::get_if<work_done>(&*ev);
    if (!done) continue;
    ASSERT_EQ(done->result.status, "ok") << done->result.error;
    ASSERT_EQ(done->result.payload.size(), 1u);
    auto v = decode_embedded<verdict>(done->result.payload[0]);
    ASSERT_TRUE(v) << v.message();
    const auto& want = cases.at(by_request.at(done->result.request_id));
    EXPECT_EQ(v->candidate_id, want.cand.id);
    EXPECT_EQ(v->content_hash, want.cand.content_hash);
    EXPECT_EQ(v->outcome, want.outcome) << want.cand.id;
    EXPECT_DOUBLE_EQ(v->reward, want.reward) << want.cand.id;
    if (want.outcome == "hack") EXPECT_FALSE(v->flags.empty());
    ++answered;
  }

  // A malformed item costs one error result, not the stage.
  work_item bad;
  bad.role = "py_verifier";
  bad.payload = {std::vector<char>{'x', 'y'}};
  ASSERT_TRUE(eventually([&] { return bool(head->dispatch(bad)); }, 3s));
  auto err = wait_event<work_done>(*head, 5s);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->result.status, "error");
  EXPECT_NE(err->result.error.find("undecodable"), std::string::npos) << err->result.error;

  ASSERT_TRUE(head->request_drain("py-stage", "test over"));
  auto left = wait_event<peer_left>(*head, 5s);
  ASSERT_TRUE(left) << stage.log();
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_TRUE(left->in_flight.empty());
  EXPECT_EQ(stage.wait_exit(5s), 0) << stage.log();
  EXPECT_EQ(head->counters().malformed, 0u);
}

TEST_F(PythonStage, JoinsACurveHeadWithItsKeyFiles) {
  if (!curve_available()) GTEST_SKIP() << "this libzmq has no CURVE support";
  fs::path dir = fs::temp_directory_path() / ("crucible_py_curve_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto server = *generate_curve_keypair();
  auto client = *generate_curve_keypair();
  ASSERT_TRUE(write_curve_keypair(server, (dir / "head.key").string(), (dir / "head.pub").string()));
  ASSERT_TRUE(write_curve_keypair(client, (dir / "stage.key").string(), (dir / "stage.pub").string()));
  auto keys = load_curve_server((dir / "head.key").string(), (dir / "stage.pub").string());
  ASSERT_TRUE(keys) << keys.message();
  wire_head_options opt;
  opt.heartbeat_interval = 200ms;
  opt.curve = *keys;
  auto head = start_head(opt);
  ASSERT_TRUE(head);
  stage_process stage(python_, {"--endpoint", head->endpoint(), "--peer-id", "py-curve", "--curve-secret",
                                (dir / "stage.key").string(), "--curve-server", (dir / "head.pub").string(),
                                "--max-items", "1"});
  auto joined = wait_event<peer_joined>(*head, 15s);
  ASSERT_TRUE(joined) << stage.log();
  EXPECT_EQ(joined->public_key, client.public_key);
  ASSERT_TRUE(wait_event<credit_granted>(*head, 5s));
  auto d = head->dispatch(verify_work(make_candidate("c1", "ok"), make_bench("c1", true, 1.5)));
  ASSERT_TRUE(d) << d.message();
  auto done = wait_event<work_done>(*head, 5s);
  ASSERT_TRUE(done) << stage.log();
  EXPECT_EQ(decode_embedded<verdict>(done->result.payload.at(0))->outcome, "pass");
  // --max-items 1: it leaves by itself, gracefully.
  auto left = wait_event<peer_left>(*head, 5s);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_EQ(stage.wait_exit(5s), 0) << stage.log();
  fs::remove_all(dir);
}

// The smallest worker in docs/wire_protocol.md runs as printed: the documentation cannot drift from the head.
TEST_F(PythonStage, TheMinimalWorkerInTheDocsWorks) {
  std::ifstream in(fs::path(CRUCIBLE_TEST_DATA_DIR) / ".." / ".." / "docs" / "wire_protocol.md");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  size_t at = doc.find("The smallest worker");
  ASSERT_NE(at, std::string::npos);
  size_t begin = doc.find("```python\n", at);
  ASSERT_NE(begin, std::string::npos);
  begin += 10;
  std::string code = doc.substr(begin, doc.find("```", begin) - begin);
  auto head = start_head(fast_head_options());
  ASSERT_TRUE(head);
  const std::string fixed = "tcp://127.0.0.1:5555";
  ASSERT_NE(code.find(fixed), std::string::npos);
  code.replace(code.find(fixed), fixed.size(), head->endpoint());
  fs::path file = fs::temp_directory_path() / ("crucible_mini_worker_" + std::to_string(::getpid()) + ".py");
  std::ofstream(file) << code;
  stage_process worker(python_, {}, file.string());
  auto joined = wait_event<peer_joined>(*head, 15s);
  ASSERT_TRUE(joined) << worker.log();
  EXPECT_EQ(joined->peer_id, "mini");
  ASSERT_TRUE(wait_event<credit_granted>(*head, 5s));
  auto d = head->dispatch(make_work("echo", "ping"));
  ASSERT_TRUE(d) << d.message();
  auto done = wait_event<work_done>(*head, 5s);
  ASSERT_TRUE(done) << worker.log();
  EXPECT_EQ(decode_embedded<control>(done->result.payload.at(0))->command, "ping");
  ASSERT_TRUE(head->request_drain("mini", "test over"));
  auto left = wait_event<peer_left>(*head, 5s);
  ASSERT_TRUE(left) << worker.log();
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_EQ(worker.wait_exit(5s), 0) << worker.log();
  EXPECT_EQ(head->counters().malformed, 0u);
  fs::remove(file);
}

}  // namespace
}  // namespace crucible::runtime
