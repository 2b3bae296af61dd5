// The cluster as operators run it: real `crucible` processes on loopback — a head (`crucible train` with
// cluster.listen), nodes (`crucible node --join`), and `crucible status` / `crucible scale` against the
// head. Every wait is bounded; every process is killed at the end of its test.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "messages/envelope.hpp"
#include "runtime/cluster/control_client.hpp"

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

const std::string crucible_bin = std::string(CRUCIBLE_BINARY_DIR) + "/crucible";

// Small, fast settings every process of a test shares (the nodes need the head's task list).
std::vector<std::string> small_settings() {
  return {"--set", "tasks.include=[bias_gelu, swiglu_gate]",
          "--set", "learner.group_size=4",
          "--set", "learner.groups_per_step=1",
          "--set", "async.groups_in_flight=2",
          "--set", "benchmark.seeds=2",
          "--set", "benchmark.input_sets=2",
          "--set", "benchmark.warmup=1",
          "--set", "benchmark.buckets=2",
          "--set", "benchmark.trials=1",
          "--set", "policy.d_model=32",
          "--set", "policy.layers=1",
          "--set", "policy.heads=2",
          "--set", "cluster.heartbeat_ms=200",
          "--set", "run.progress=false",
          "--set", "run.shutdown_grace_s=20"};
}

// A child process with its output in a file.
class process {
 public:
  process(std::vector<std::string> args, const std::string& log) : log_(log) {
    std::vector<char*> argv;
    args.insert(args.begin(), crucible_bin);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~process() { kill_now(); }
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) {
    if (pid_ > 0 && !exited_) ::kill(pid_, sig);
  }
  void kill_now() {
    if (pid_ <= 0 || exited_) return;
    ::kill(pid_, SIGKILL);
    wait_for(5s);
  }
  /// Waits for the exit; false if it is still running after `timeout`.
  bool wait_for(std::chrono::milliseconds timeout) {
    if (exited_) return true;
    auto end = clock_type::now() + timeout;
    while (clock_type::now() < end) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        exited_ = true;
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        return true;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  int exit_code() const { return code_; }
  std::string output() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

crucible::test::command_result run_cli(const std::string& args) {
  return crucible::test::run_command(crucible_bin + " " + args + " 2>&1");
}

// `crucible status --json`, or null when the head did not answer.
nlohmann::json status_of(const std::string& endpoint, const std::string& extra = "") {
  auto r = run_cli("status --json --timeout 3 --connect " + endpoint + " " + extra);
  if (r.exit_code != 0) return nullptr;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    return nullptr;
  }
}

template <class Pred>
bool eventually(std::chrono::milliseconds timeout, Pred pred, std::chrono::milliseconds step = 200ms) {
  auto end = clock_type::now() + timeout;
  while (clock_type::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

std::string wait_endpoint(const std::string& run_dir, process& head) {
  std::string ep;
  eventually(60s, [&] {
    std::ifstream in(run_dir + "/cluster_endpoint");
    return static_cast<bool>(in >> ep) && !ep.empty();
  });
  EXPECT_FALSE(ep.empty()) << "the head never wrote its endpoint:\n" << head.output();
  return ep;
}

int node_count(const nlohmann::json& s) {
  return s.is_object() && s.contains("nodes") ? static_cast<int>(s["nodes"].size()) : -1;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(CRUCIBLE_BINARY_DIR) / "test-cluster" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// "--set" before each key=value.
std::vector<std::string> sets(const std::vector<std::string>& kv) {
  std::vector<std::string> out;
  for (const auto& x : kv) out.insert(out.end(), {"--set", x});
  return out;
}

// A head on an ephemeral loopback port, its run in dir/head, the small settings last.
std::vector<std::string> head_args(const fs::path& dir, const std::vector<std::string>& extra) {
  return std::vector<std::string>{"train", "--set", "run.dir=" + (dir / "head").string(), "--set",
                                  "cluster.listen=tcp://127.0.0.1:0"} +
         extra + small_settings();
}

// A node joining `ep` as `id`, its run in dir, the small settings last.
std::vector<std::string> node_args(const fs::path& dir, const std::string& ep, const std::string& id,
                                   const std::vector<std::string>& extra = {}) {
  return std::vector<std::string>{"node", "--join", ep, "--node-id", id, "--set", "run.dir=" + dir.string()} +
         extra + small_settings();
}

// Compile and benchmark left to the nodes; verify stays on the head, as it always does.
const std::vector<std::string> remote_stages = {"--set", "roles.compiler=0", "--set", "roles.benchmarker=0"};

TEST(Cluster, HeadAndTwoNodesTrainAndAKilledNodeLosesNoCandidate) {
  auto dir = fresh_dir("two_nodes");
  process head(head_args(dir, sets({"run.max_steps=4", "run.max_minutes=4"}) + remote_stages),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  process n1(node_args(dir, ep, "n1"), (dir / "n1.log").string());
  process n2(node_args(dir, ep, "n2", {"--roles", "compiler=1,benchmarker=1"}), (dir / "n2.log").string());
  ASSERT_TRUE(eventually(30s, [&] { return node_count(status_of(ep)) == 2; })) << head.output();

  // Kill n2 -9 while it holds work: what it had is re-dispatched to n1.
  nlohmann::json before;
  bool busy = eventually(
      120s,
      [&] {
        before = status_of(ep);
        if (!before.is_object()) return false;
        for (const auto& n : before["nodes"])
          if (n["node_id"] == "n2" && n["in_flight"].get<int>() > 0) return true;
        return false;
      },
      100ms);
  ASSERT_TRUE(busy) << "n2 never held work\n" << head.output();
  n2.signal(SIGKILL);
  ASSERT_TRUE(n2.wait_for(5s));
  EXPECT_TRUE(eventually(10s, [&] { return node_count(status_of(ep)) == 1; }))
      << "the head still lists the killed node";

  ASSERT_TRUE(head.wait_for(300s)) << "the run did not finish\n" << head.output();
  EXPECT_EQ(head.exit_code(), 0) << head.output();
  std::string out = head.output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m,
      std::regex(
          R"((\d+) candidates generated, (\d+) scored, (\d+) abandoned at the stop, (\d+) lost, (\d+) stage re-dispatches)")))
      << out;
  long generated = std::stol(m[1]), scored = std::stol(m[2]), abandoned = std::stol(m[3]),
       lost = std::stol(m[4]), redispatched = std::stol(m[5]);
  EXPECT_GT(scored, 0);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(generated, scored + abandoned) << "every candidate is accounted for exactly once";
  EXPECT_GE(redispatched, 1) << "the killed node's work must have been re-dispatched";
  EXPECT_EQ(out.find("finished twice"), std::string::npos);
  std::ifstream log((dir / "head" / "crucible.log").string());
  std::stringstream ss;
  ss << log.rdbuf();
  EXPECT_EQ(ss.str().find("finished twice"), std::string::npos) << "a candidate was counted twice";
  EXPECT_NE(ss.str().find("n2"), std::string::npos);

  n1.signal(SIGTERM);
  ASSERT_TRUE(n1.wait_for(60s)) << n1.output();
  EXPECT_EQ(n1.exit_code(), 0) << n1.output();
  std::smatch served;
  const std::string n1_out = n1.output();
  ASSERT_TRUE(std::regex_search(n1_out, served, std::regex(R"(served (\d+) work items)"))) << n1_out;
  EXPECT_GT(std::stol(served[1]), 0);
}

TEST(Cluster, ScalingBenchmarkersShowsInStatusWithinTwoSeconds) {
  auto dir = fresh_dir("scale");
  process head(head_args(dir, sets({"run.max_minutes=3", "roles.benchmarker=1", "run.shutdown_grace_s=5"})),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  // Asked the way `crucible status` asks (runtime::send_control), without a process start per question:
  // what is timed is how soon the head shows the change, not how long a CLI takes to load.
  auto benchmarkers = [&] {
    crucible::control c;
    c.command = "status";
    auto s = crucible::runtime::send_control(ep, c, 2s);
    if (!s) return -1;
    for (const auto& r : s->roles)
      if (r.role == "benchmarker") return static_cast<int>(r.actors);
    return -1;
  };
  ASSERT_TRUE(eventually(30s, [&] { return benchmarkers() == 1; }));
  for (int target : {3, 1}) {
    auto r = run_cli("scale --connect " + ep + " --role benchmarker --count " + std::to_string(target));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto t0 = clock_type::now();
    ASSERT_TRUE(eventually(
        5s, [&] { return benchmarkers() == target; }, 50ms))
        << target;
    double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    EXPECT_LE(s, 2.0) << "benchmarkers " << target << " showed in status after " << s << " s";
  }
  auto shown = status_of(ep);  // and through the CLI itself
  ASSERT_TRUE(shown.is_object());
  EXPECT_EQ(shown["roles"]["benchmarker"]["actors"], 1);
  auto bad = run_cli("scale --connect " + ep + " --role learner --count 2");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("exactly 1"), std::string::npos) << bad.out;
  // A typo of a count is refused with the bound, in a sentence, and starts nothing.
  auto huge = run_cli("scale --connect " + ep + " --role benchmarker --count 200000");
  EXPECT_NE(huge.exit_code, 0);
  EXPECT_NE(huge.out.find("scale benchmarker: count 200000 is above run.max_role_count (256)"),
            std::string::npos)
      << huge.out;
  EXPECT_EQ(status_of(ep)["roles"]["benchmarker"]["actors"], 1);
  head.signal(SIGINT);
  ASSERT_TRUE(head.wait_for(120s)) << head.output();
  EXPECT_EQ(head.exit_code(), 0) << head.output();
  EXPECT_NE(head.output().find(" 0 lost"), std::string::npos) << head.output();
}

TEST(Cluster, ANodeScaledToZeroDrainsAndLeavesByItself) {
  auto dir = fresh_dir("drain");
  process head(head_args(dir, sets({"run.max_steps=3", "run.max_minutes=4"}) + remote_stages),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  process n1(node_args(dir, ep, "n1"), (dir / "n1.log").string());
  process n2(node_args(dir, ep, "n2"), (dir / "n2.log").string());
  ASSERT_TRUE(eventually(30s, [&] { return node_count(status_of(ep)) == 2; })) << head.output();
  ASSERT_TRUE(eventually(
      120s,
      [&] {
        auto s = status_of(ep);
        if (!s.is_object()) return false;
        for (const auto& n : s["nodes"])
          if (n["node_id"] == "n1" && n["in_flight"].get<int>() > 0) return true;
        return false;
      },
      100ms))
      << "n1 never held work";
  auto r = run_cli("scale --connect " + ep + " --role benchmarker --count 0 --node n1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(n1.wait_for(90s)) << "the drained node did not leave\n" << n1.output();
  EXPECT_EQ(n1.exit_code(), 0) << n1.output();
  EXPECT_TRUE(eventually(10s, [&] { return node_count(status_of(ep)) == 1; }));
  auto grow = run_cli("scale --connect " + ep + " --role benchmarker --count 2 --node n2");
  EXPECT_NE(grow.exit_code, 0) << "a node's capacity is what it registered";
  ASSERT_TRUE(head.wait_for(300s)) << head.output();
  const std::string out = head.output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m,
      std::regex(R"((\d+) candidates generated, (\d+) scored, (\d+) abandoned at the stop, (\d+) lost)")))
      << out;
  EXPECT_EQ(std::stol(m[4]), 0);
  EXPECT_EQ(std::stol(m[1]), std::stol(m[2]) + std::stol(m[3]));
}

TEST(Cluster, WithCurveKeysOnlyANodeWithAnAllowedKeyJoins) {
  auto dir = fresh_dir("curve");
  fs::create_directories(dir / "allowed");
  auto key = [&](const std::string& name, bool allowed) {
    auto r = run_cli("keygen --secret " + (dir / (name + ".key")).string() + " --public " +
                     (dir / (allowed ? "allowed" : ".") / (name + ".pub")).string());
    ASSERT_EQ(r.exit_code, 0) << r.out;
  };
  key("head", false);
  key("n1", true);
  key("stranger", false);
  process head(head_args(dir, sets({"cluster.secret_key=" + (dir / "head.key").string(),
                                    "cluster.authorized_keys=" + (dir / "allowed").string(),
                                    "run.max_minutes=3", "run.shutdown_grace_s=5"}) +
                                  remote_stages),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  const std::string as_n1 = "--set cluster.secret_key=" + (dir / "n1.key").string() +
                            " --set cluster.server_key=" + (dir / "head.pub").string();
  process n1(node_args(dir, ep, "n1",
                       sets({"cluster.secret_key=" + (dir / "n1.key").string(),
                             "cluster.server_key=" + (dir / "head.pub").string()})),
             (dir / "n1.log").string());
  process plain(node_args(dir, ep, "plain"), (dir / "plain.log").string());
  process stranger(node_args(dir, ep, "stranger",
                             sets({"cluster.secret_key=" + (dir / "stranger.key").string(),
                                   "cluster.server_key=" + (dir / "head.pub").string()})),
                   (dir / "stranger.log").string());
  ASSERT_TRUE(eventually(30s, [&] { return node_count(status_of(ep, as_n1)) >= 1; })) << head.output();
  std::this_thread::sleep_for(3s);  // time for the others to try, and be refused
  auto s = status_of(ep, as_n1);
  ASSERT_TRUE(s.is_object());
  ASSERT_EQ(node_count(s), 1) << s.dump(2);
  EXPECT_EQ(s["nodes"][0]["node_id"], "n1");
  // Without a key, not even a status request is answered.
  EXPECT_TRUE(status_of(ep).is_null());
  auto refused = run_cli("scale --timeout 2 --connect " + ep + " --role benchmarker --count 3");
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_EQ(plain.output().find("registered with head"), std::string::npos) << plain.output();
  EXPECT_EQ(stranger.output().find("registered with head"), std::string::npos) << stranger.output();
  head.signal(SIGINT);
  ASSERT_TRUE(head.wait_for(120s)) << head.output();
}

// A TCP port nothing listens on now (the kernel's choice, released at once).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The head killed -9 and restarted with --resume on the same endpoint: the node reconnects by itself and
// the run goes on from the last checkpoint to its end.
TEST(Cluster, AHeadRestartedWithResumeGetsItsNodesBack) {
  auto dir = fresh_dir("resume");
  const std::string ep = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::string run_dir = (dir / "head").string();
  auto head = std::make_unique<process>(
      std::vector<std::string>{"train", "--set", "run.dir=" + run_dir, "--set", "cluster.listen=" + ep,
                               "--set", "run.max_steps=4", "--set", "run.checkpoint_every=1", "--set",
                               "run.max_minutes=4"} +
          remote_stages + small_settings(),
      (dir / "head1.log").string());
  process node(node_args(dir, ep, "n1"), (dir / "n1.log").string());
  // Until the first checkpoint: then the head dies without warning.
  ASSERT_TRUE(eventually(
      240s, [&] { return fs::exists(fs::path(run_dir) / "checkpoints" / "LATEST"); }, 250ms))
      << head->output();
  head->signal(SIGKILL);
  ASSERT_TRUE(head->wait_for(10s));
  EXPECT_TRUE(eventually(10s, [&] {
    return node.output().find("head lost") != std::string::npos ||
           node.output().find("reconnecting") != std::string::npos;
  })) << node.output();
  process resumed(std::vector<std::string>{"train", "--resume", run_dir}, (dir / "head2.log").string());
  ASSERT_TRUE(resumed.wait_for(300s)) << resumed.output();
  EXPECT_EQ(resumed.exit_code(), 0) << resumed.output();
  const std::string out = resumed.output();
  EXPECT_NE(out.find("(resumed)"), std::string::npos) << out;
  EXPECT_NE(out.find(" 0 lost"), std::string::npos) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(after (\d+) learner steps)"))) << out;
  EXPECT_EQ(std::stol(m[1]), 4) << "the resumed run reaches run.max_steps";
  node.signal(SIGTERM);
  ASSERT_TRUE(node.wait_for(60s));
  const std::string n_out = node.output();
  std::smatch sessions;
  ASSERT_TRUE(std::regex_search(n_out, sessions, std::regex(R"(in (\d+) sessions)"))) << n_out;
  EXPECT_GE(std::stol(sessions[1]), 2) << "the node registered again with the restarted head";
}

// Every stored candidate, decoded.
std::vector<crucible::scored_candidate> stored(const std::string& db_path) {
  std::vector<crucible::scored_candidate> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return out;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT record FROM candidates", -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string blob(static_cast<const char*>(sqlite3_column_blob(s, 0)), sqlite3_column_bytes(s, 0));
    if (auto rec = crucible::decode_as<crucible::scored_candidate>(blob)) out.push_back(std::move(*rec));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

bool has_evidence(const crucible::scored_candidate& c, const std::string& prefix) {
  for (const auto& e : c.judged.evidence)
    if (e.rfind(prefix, 0) == 0) return true;
  return false;
}

// The judge stage beside remote stages: the head's own judge reviews every pass (review_speedup 0: machine
// speed decides nothing) and convicts no emitted program. A node that offers the judge, or the verifier,
// does not start: their verdicts are the head's.
TEST(Cluster, TheJudgeStaysOnTheHeadBesideRemoteStages) {
  auto dir = fresh_dir("judge");
  const auto judge = sets({"pipeline=[compile, benchmark, verify, judge]", "judge.review_speedup=0"});
  process head(head_args(dir, sets({"run.max_steps=2", "run.max_minutes=4"}) + judge + remote_stages),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  for (const char* role : {"judge", "verifier"}) {
    process rogue(
        node_args(dir, ep, std::string("r-") + role,
                  std::vector<std::string>{"--roles", std::string("compiler=1,") + role + "=1"} + judge),
        (dir / (std::string("r-") + role + ".log")).string());
    ASSERT_TRUE(rogue.wait_for(60s)) << rogue.output();
    EXPECT_NE(rogue.exit_code(), 0) << rogue.output();
    EXPECT_NE(
        rogue.output().find(std::string("--roles: ") + role + " gives verdicts, which are made on the head"),
        std::string::npos)
        << rogue.output();
  }
  process node(
      node_args(dir, ep, "n1", std::vector<std::string>{"--roles", "compiler=1,benchmarker=1"} + judge),
      (dir / "n1.log").string());
  ASSERT_TRUE(head.wait_for(300s)) << head.output();
  EXPECT_EQ(head.exit_code(), 0) << head.output();
  int passes = 0, reviewed = 0;
  for (const auto& c : stored((dir / "head" / "replay.sqlite").string())) {
    EXPECT_NE(c.judged.review.finding, "hack") << c.cand.id << ": " << c.judged.review.reasoning;
    if (c.judged.outcome != "pass") continue;
    ++passes;
    reviewed += c.judged.review.reviewer == "rules";
  }
  ASSERT_GT(passes, 0) << head.output();
  EXPECT_EQ(reviewed, passes) << "every pass was reviewed by the head's judge";
}

// /usr/bin/python3 with `args`, its stderr in `log`; its pid, or -1.
pid_t spawn_python(std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), "/usr/bin/python3");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// SIGTERM (a graceful leave), then SIGKILL after 10 s.
void stop_python(pid_t pid) {
  ::kill(pid, SIGTERM);
  int st = 0;
  for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) != pid; ++i) std::this_thread::sleep_for(100ms);
  ::kill(pid, SIGKILL);
  waitpid(pid, &st, WNOHANG);
}

// A rogue node on the head's own host (no keys needed on loopback) joins as a benchmarker and answers every
// benchmark "correct, 9999x" with times that say 1x: the head uses none of them, drains the node at its
// first, measures the candidates again with its own benchmarker, and loses none.
TEST(Cluster, ARogueBenchmarkersForgedSpeedupsAreNotUsed) {
  if (std::system("/usr/bin/python3 -c 'import zmq, msgpack' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with zmq and msgpack (Debian: python3-zmq python3-msgpack)";
  auto dir = fresh_dir("rogue");
  process head(head_args(dir, sets({"run.max_steps=2", "run.max_minutes=4", "roles.benchmarker=1"})),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  std::string script = std::string(CRUCIBLE_TEST_DATA_DIR) + "/rogue/forged_benchmarker.py";
  std::string rogue_log = (dir / "rogue.log").string();
  pid_t rogue =
      spawn_python({script, "--endpoint", ep, "--role", "benchmarker", "--capacity", "2"}, rogue_log);
  ASSERT_GT(rogue, 0);
  bool finished = head.wait_for(300s);
  stop_python(rogue);
  ASSERT_TRUE(finished) << head.output();
  EXPECT_EQ(head.exit_code(), 0) << head.output();
  EXPECT_NE(head.output().find(" 0 lost"), std::string::npos) << head.output();
  std::ifstream in(rogue_log);
  std::stringstream forged;
  forged << in.rdbuf();
  ASSERT_NE(forged.str().find("forged a 9999x benchmark"), std::string::npos)
      << "the rogue node never got work\n"
      << forged.str();
  EXPECT_NE(head.output().find("not used: bucket 0 claims 9999x from 1 ms eager and 1 ms candidate"),
            std::string::npos)
      << head.output();
  auto cands = stored((dir / "head" / "replay.sqlite").string());
  ASSERT_FALSE(cands.empty());
  for (const auto& c : cands) {
    EXPECT_LT(c.bench.speedup_vs_eager, 1000) << c.cand.id;
    EXPECT_LT(c.judged.speedup, 1000) << c.cand.id;
  }
}

// A C++ plugin stage in the head and a Python stage joined over the wire, in one pipeline: every scored
// candidate went through both.
TEST(Cluster, APluginStageAndAPythonStageBothTakePart) {
  if (std::system("/usr/bin/python3 -c 'import zmq, msgpack' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with zmq and msgpack (Debian: python3-zmq python3-msgpack)";
  const std::string plugin = std::string(CRUCIBLE_BINARY_DIR) + "/plugins/source_audit.so";
  if (!fs::exists(plugin)) GTEST_SKIP() << "the example plugin was not built: " << plugin;
  auto dir = fresh_dir("stages");
  process head(head_args(dir, sets({"run.max_steps=2", "run.max_minutes=4", "plugins=[" + plugin + "]",
                                    "roles.source_audit=1",
                                    "pipeline=[compile, benchmark, verify, source_audit, py_verifier]"})),
               (dir / "head.log").string());
  std::string ep = wait_endpoint((dir / "head").string(), head);
  ASSERT_FALSE(ep.empty());
  // The Python stage, as any external process joins: the wire protocol only.
  std::string py_log = (dir / "py.log").string();
  std::string script = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../examples/python_stage/stage.py";
  pid_t py = spawn_python({script, "--endpoint", ep, "--role", "py_verifier"}, py_log);
  ASSERT_GT(py, 0);
  process node(node_args(dir, ep, "n1"), (dir / "n1.log").string());
  bool finished = head.wait_for(300s);
  stop_python(py);
  ASSERT_TRUE(finished) << head.output();
  EXPECT_EQ(head.exit_code(), 0) << head.output();
  EXPECT_NE(head.output().find(" 0 lost"), std::string::npos) << head.output();
  auto cands = stored((dir / "head" / "replay.sqlite").string());
  int scored = 0, audited = 0, py_checked = 0;
  for (const auto& c : cands) {
    if (c.judged.outcome == "abandoned") continue;
    ++scored;
    audited += has_evidence(c, "source_audit: ");
    py_checked += has_evidence(c, "py_verifier: ");
  }
  std::ifstream pyin(py_log);
  std::stringstream pyss;
  pyss << pyin.rdbuf();
  ASSERT_GT(scored, 0) << head.output();
  EXPECT_EQ(audited, scored) << "every scored candidate went through the plugin stage";
  EXPECT_EQ(py_checked, scored) << "every scored candidate went through the Python stage\n" << pyss.str();
}

}  // namespace

namespace {

// A head that cannot listen (its port taken by another process, or an endpoint ZeroMQ cannot parse) ends
// `crucible train` at once with exit code 2 and says why, rather than waiting forever.
TEST(Cluster, AHeadThatCannotListenEndsTrainWithExitCode2) {
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string taken = "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  for (const auto& [endpoint, why] : {std::pair<std::string, std::string>{taken, "Address already in use"},
                                      {"tcp:/127.0.0.1:x", "Invalid argument"}}) {
    auto dir = fresh_dir("cannot-listen");
    auto t0 = clock_type::now();
    auto r = run_cli("train --set run.dir=" + dir.string() + " --set cluster.listen=" + endpoint);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("cannot listen on '" + endpoint + "': " + why), std::string::npos) << r.out;
    // Bounded by the work before the bind (loading tasks), not by any wait: seconds, even on a slow machine.
    EXPECT_LT(std::chrono::duration<double>(clock_type::now() - t0).count(), 60.0);
    fs::remove_all(dir);
  }
  ::close(holder);
}

// A head whose stages are all left to nodes, and no node: it says what it waits for, every few seconds,
// rather than nothing; stopped, it points only to what it wrote.
TEST(Cluster, AHeadWithoutNodesSaysWhatItWaitsFor) {
  auto dir = fresh_dir("no_nodes");
  process head(head_args(dir, sets({"run.max_minutes=3", "run.shutdown_grace_s=2"}) + remote_stages),
               (dir / "head.log").string());
  const std::string note =
      "crucible train: waiting for nodes to serve compile (compiler), benchmark (benchmarker)";
  ASSERT_TRUE(eventually(60s, [&] { return head.output().find(note) != std::string::npos; }))
      << head.output();
  head.signal(SIGINT);
  ASSERT_TRUE(head.wait_for(120s)) << head.output();
  EXPECT_EQ(head.output().find("metrics: "), std::string::npos)
      << "no step, so no metrics.jsonl to point to\n"
      << head.output();
}

}  // namespace
