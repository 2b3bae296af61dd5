// Three hosts in network namespaces: a head in one, a node in each of the two others, joined over a bridge
// (10.77.0.1-3/24), training a short CPU run together. The head and one node are started the way srun
// starts them (the same `crucible train` command line, SLURM_* variables saying which task each is; the node
// finds the head from the node list); the other node joins by hand (`crucible node --join`). It needs root
// with CAP_SYS_ADMIN and CAP_NET_ADMIN (CI runs as root); where `ip netns add` is not allowed it skips and
// says why. The namespaces are removed whatever happens (and any left by a killed earlier run first); every
// wait is bounded.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string crucible_bin = std::string(CRUCIBLE_BINARY_DIR) + "/crucible";
const std::string repo = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../..";
const std::string ns_prefix = "crun";  // crun<pid>-sw, crun<pid>-h0 .. h2

using shell_result = crucible::test::command_result;

// stdout and stderr together, trailing blanks trimmed
shell_result shell(const std::string& cmd) {
  auto r = crucible::test::run_command(cmd + " 2>&1");
  while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' ')) r.out.pop_back();
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Three namespaces h0..h2, each with eth0 (10.77.0.<i+1>/24) on a bridge in a fourth namespace. Every link
// is made inside a namespace, so deleting the namespaces removes everything.
class netns_lab {
 public:
  netns_lab() : prefix_(ns_prefix + std::to_string(::getpid()) + "-") {}
  ~netns_lab() { down(); }
  netns_lab(const netns_lab&) = delete;
  netns_lab& operator=(const netns_lab&) = delete;

  /// Builds the namespaces; false with why_not() when the machine does not allow it.
  bool up() {
    if (::geteuid() != 0) {
      why_not_ = "network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN); this test runs as uid " +
                 std::to_string(::geteuid());
      return false;
    }
    if (shell("ip -V").exit_code != 0) {
      why_not_ = "no `ip` command (install iproute2)";
      return false;
    }
    remove_stale();
    mounted_before_ = run_netns_mounted();
    if (auto r = add_namespace(prefix_ + "sw"); r.exit_code != 0) {
      down();
      why_not_ =
          "`ip netns add` is not allowed here (a container without CAP_SYS_ADMIN/CAP_NET_ADMIN?): " + r.out;
      return false;
    }
    const std::string sw = prefix_ + "sw";
    if (auto r = shell("ip -n " + sw + " link add br0 type bridge && ip -n " + sw + " link set br0 up");
        r.exit_code != 0) {
      why_not_ = "cannot make a bridge in a namespace (no bridge support?): " + r.out;
      return false;
    }
    for (int i = 0; i < 3; ++i) {
      std::string ns = host(i), port = "p" + std::to_string(i);
      if (auto r = add_namespace(ns); r.exit_code != 0) {
        why_not_ = "ip netns add " + ns + ": " + r.out;
        return false;
      }
      auto r =
          shell("ip -n " + ns + " link add eth0 type veth peer name " + port + " netns " + sw + " && ip -n " +
                sw + " link set " + port + " master br0 up && ip -n " + ns + " addr add " + address(i) +
                "/24 dev eth0 && ip -n " + ns + " link set eth0 up && ip -n " + ns + " link set lo up");
      if (r.exit_code != 0) {
        why_not_ = "cannot wire " + ns + " to the bridge (no veth support?): " + r.out;
        return false;
      }
    }
    return true;
  }

  void down() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) shell("ip netns del " + *it);
    made_.clear();
    // `ip netns add` bind-mounts /run/netns onto itself (even when it then fails): leave the mounts as found.
    if (!mounted_before_ && run_netns_mounted()) ::umount2("/run/netns", MNT_DETACH);
  }

  std::string host(int i) const { return prefix_ + "h" + std::to_string(i); }
  static std::string address(int i) { return "10.77.0." + std::to_string(i + 1); }
  const std::string& why_not() const { return why_not_; }

 private:
  shell_result add_namespace(const std::string& name) {
    auto r = shell("ip netns add " + name);
    if (r.exit_code == 0) made_.push_back(name);
    return r;
  }

  bool mounted_before_ = true;  // until up() looks: never unmount what this test did not mount

  static bool run_netns_mounted() {
    std::ifstream info("/proc/self/mountinfo");
    for (std::string line; std::getline(info, line);)
      if (line.find(" /run/netns ") != std::string::npos) return true;
    return false;
  }

  // Namespaces of an earlier run of this test that was killed before it could clean up (its pid is gone).
  static void remove_stale() {
    std::istringstream list(shell("ip netns list").out);
    std::regex mine("^(" + ns_prefix + R"(([0-9]+)-\S+))");
    for (std::string line; std::getline(list, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, mine)) continue;
      pid_t pid = static_cast<pid_t>(std::stol(m[2]));
      if (::kill(pid, 0) != 0 && errno == ESRCH) shell("ip netns del " + m[1].str());
    }
  }

  std::string prefix_;
  std::vector<std::string> made_;
  std::string why_not_;
};

// A crucible process inside a namespace (`ip netns exec NS crucible ...`, which becomes crucible itself),
// in its own process group, with an environment of our choosing and its output in a file.
class netns_process {
 public:
  netns_process(const std::string& ns, const std::vector<std::string>& extra_env,
                std::vector<std::string> args, const std::string& log)
      : log_(log) {
    std::vector<std::string> argv_s = {"ip", "netns", "exec", ns, crucible_bin};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    // The launcher's variables are ours alone: none leak in from the environment the tests run in.
    std::vector<std::string> env_s;
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      if (kv.rfind("SLURM", 0) == 0 || kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) continue;
      env_s.push_back(kv);
    }
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execvpe(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (pid_ > 0) ::setpgid(pid_, pid_);
  }
  ~netns_process() { kill_now(); }
  netns_process(const netns_process&) = delete;
  netns_process& operator=(const netns_process&) = delete;

  bool started() const { return pid_ > 0; }
  void signal(int sig) {
    if (pid_ > 0 && !exited_) ::kill(pid_, sig);
  }
  /// Waits up to `timeout` for the exit; true if it exited (exit_code() then says how).
  bool wait_for(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited_ && pid_ > 0) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(100ms);
    }
    return exited_;
  }
  /// The whole group (eval workers, compilers) at once.
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    if (!exited_) wait_for(10s);
  }
  int exit_code() const { return exit_code_; }
  std::string output() const { return read_file(log_); }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  std::string log_;
};

int64_t number_before(const std::string& text, const std::string& words) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"((\d+) )" + words))) return -1;
  return std::stoll(m[1]);
}

TEST(NetnsCluster, AHeadAndTwoNodesOnThreeHostsTrainTogether) {
  netns_lab lab;
  if (!lab.up()) GTEST_SKIP() << "three hosts in network namespaces: " << lab.why_not();
  const std::string dir =
      (fs::temp_directory_path() / ("crucible-netns-" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string head_endpoint = "tcp://" + netns_lab::address(0) + ":5555";

  // The command line srun gives every task (configs/cluster.yaml: pipeline stages on the nodes only), small.
  std::vector<std::string> train = {"train",
                                    "--config",
                                    repo + "/configs/cluster.yaml",
                                    "--set",
                                    "cluster.listen=" + head_endpoint,
                                    "--set",
                                    "cluster.plaintext_remote=true",  // three hosts, no keys: opted in
                                    "--set",
                                    "run.dir=" + dir + "/run"};
  const std::vector<std::string> small = {
      "--set", "tasks.include=[bias_gelu]", "--set", "learner.group_size=4",
      "--set", "learner.groups_per_step=1", "--set", "async.groups_in_flight=2",
      "--set", "run.max_steps=2",           "--set", "run.max_minutes=4",
      "--set", "run.progress=false",        "--set", "run.shutdown_grace_s=20",
      "--set", "benchmark.seeds=2",         "--set", "benchmark.input_sets=2",
      "--set", "benchmark.warmup=1",        "--set", "benchmark.buckets=2",
      "--set", "benchmark.trials=1",        "--set", "policy.d_model=32",
      "--set", "policy.layers=1",           "--set", "policy.heads=2",
      "--set", "cluster.heartbeat_ms=200",  "--set", "cluster.liveness=10"};
  train.insert(train.end(), small.begin(), small.end());
  auto slurm = [&](int procid) {
    return std::vector<std::string>{"SLURM_PROCID=" + std::to_string(procid),
                                    "SLURM_NTASKS=3",
                                    "SLURM_LOCALID=0",
                                    "SLURM_JOB_NODELIST=10.77.0.[1-3]",
                                    "SLURM_TASKS_PER_NODE=1(x3)",
                                    "SLURMD_NODENAME=" + netns_lab::address(procid)};
  };
  netns_process head(lab.host(0), slurm(0), train, dir + "/head.log");
  netns_process slurm_node(lab.host(1), slurm(1), train, dir + "/node1.log");
  std::vector<std::string> by_hand = {"node",   "--config",    repo + "/configs/cluster.yaml",
                                      "--join", head_endpoint, "--node-id",
                                      "host3",  "--set",       "run.dir=" + dir + "/host3"};
  by_hand.insert(by_hand.end(), small.begin(), small.end());
  netns_process hand_node(lab.host(2), {}, by_hand, dir + "/node2.log");
  ASSERT_TRUE(head.started() && slurm_node.started() && hand_node.started());

  // The run ends by itself (2 learner steps); the Slurm node then leaves by itself once the head is gone
  // (10 x liveness heartbeats: 20 s, at least 10 s); the other one is stopped as an operator would.
  const bool head_done = head.wait_for(300s);
  const bool slurm_node_left = head_done && slurm_node.wait_for(90s);
  hand_node.signal(SIGTERM);
  const bool hand_node_left = hand_node.wait_for(90s);
  head.kill_now();
  slurm_node.kill_now();
  hand_node.kill_now();
  const std::string head_out = head.output(), node1_out = slurm_node.output(), node2_out = hand_node.output();
  const std::string all = "--- head (" + lab.host(0) + ")\n" + head_out + "\n--- Slurm node (" + lab.host(1) +
                          ")\n" + node1_out + "\n--- node by hand (" + lab.host(2) + ")\n" + node2_out;
  lab.down();

  ASSERT_TRUE(head_done) << "the head did not finish within 300 s\n" << all;
  EXPECT_EQ(head.exit_code(), 0) << all;
  EXPECT_NE(head_out.find("slurm task 0 of 3 on 10.77.0.1 is the head; nodes join tcp://10.77.0.1:5555"),
            std::string::npos)
      << all;
  EXPECT_NE(head_out.find("done after 2 learner steps"), std::string::npos) << all;
  EXPECT_GT(number_before(head_out, "scored, "), 0) << "no candidate scored\n" << all;
  EXPECT_EQ(number_before(head_out, "lost, "), 0) << all;

  EXPECT_NE(node1_out.find("slurm task 1 of 3 on 10.77.0.2 is a node (id 10.77.0.2-0) of the head at "
                           "tcp://10.77.0.1:5555"),
            std::string::npos)
      << all;
  EXPECT_TRUE(slurm_node_left) << "the Slurm node did not leave within 90 s of its head\n" << all;
  EXPECT_EQ(slurm_node.exit_code(), 0) << all;
  EXPECT_NE(node1_out.find("is gone (no answer since the run ended); this node leaves"), std::string::npos)
      << all;
  EXPECT_GT(number_before(node1_out, "work items"), 0) << "the Slurm node served no work\n" << all;
  EXPECT_NE(node1_out.find("crucible node 10.77.0.2-0: served"), std::string::npos) << all;

  EXPECT_TRUE(hand_node_left) << "the node did not stop within 90 s of SIGTERM\n" << all;
  EXPECT_EQ(hand_node.exit_code(), 0) << all;
  EXPECT_GT(number_before(node2_out, "work items"), 0) << "the node started by hand served no work\n" << all;
  EXPECT_NE(node2_out.find("crucible node host3: served"), std::string::npos) << all;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
