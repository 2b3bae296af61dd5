// The launch side of the cluster: Slurm's host lists, which process a launcher started (head or node, and
// where the head is), the placement plan and its warnings, configs/cluster.yaml and the example batch script.
#include "runtime/cluster/launch_plan.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

using strings = std::vector<std::string>;
using devices = std::vector<int64_t>;

const std::string repo = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../..";

config parse(const std::string& yaml, const strings& overrides = {}) {
  auto c = parse_config(yaml, overrides, "test.yaml");
  EXPECT_TRUE(c) << c.message();
  return c ? *c : config{};
}

config cluster_config(const strings& overrides = {}) {
  auto c = load_config(repo + "/configs/cluster.yaml", overrides);
  EXPECT_TRUE(c) << c.message();
  return c ? *c : config{};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_error(const std::string& list, const std::string& fragment) {
  auto hosts = expand_slurm_hostlist(list);
  ASSERT_FALSE(hosts) << "accepted '" << list << "'";
  EXPECT_NE(hosts.message().find(fragment), std::string::npos) << hosts.message();
}

bool has_warning(const placement_plan& plan, const std::string& fragment) {
  for (const auto& w : plan.warnings)
    if (w.find(fragment) != std::string::npos) return true;
  return false;
}

std::string all_warnings(const placement_plan& plan) {
  std::string s;
  for (const auto& w : plan.warnings) s += "  " + w + "\n";
  return s;
}

// What srun sets for task `procid` of `ntasks`, one task per host.
environment slurm_env(int64_t procid, int64_t ntasks, const std::string& nodelist, const std::string& host) {
  return {{"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", std::to_string(ntasks)},
          {"SLURM_JOB_NODELIST", nodelist},
          {"SLURM_LOCALID", "0"},
          {"SLURMD_NODENAME", host},
          {"SLURM_TASKS_PER_NODE", "1(x" + std::to_string(ntasks) + ")"}};
}

// --- host lists
// ---------------------------------------------------------------------------------------------

TEST(SlurmHostlist, PlainNamesAndRanges) {
  EXPECT_EQ(*expand_slurm_hostlist("gpu01"), strings{"gpu01"});
  EXPECT_EQ(*expand_slurm_hostlist("a,b,c"), (strings{"a", "b", "c"}));
  EXPECT_EQ(*expand_slurm_hostlist("gpu[01-03,07],cpu5"),
            (strings{"gpu01", "gpu02", "gpu03", "gpu07", "cpu5"}));
  EXPECT_EQ(*expand_slurm_hostlist("  n[1-2]\n"), (strings{"n1", "n2"}));
  EXPECT_EQ(*expand_slurm_hostlist("n[5]"), strings{"n5"});
  EXPECT_EQ(*expand_slurm_hostlist("node-[1-2]-ib"), (strings{"node-1-ib", "node-2-ib"}));
  EXPECT_EQ(*expand_slurm_hostlist("10.77.0.[1-3]"), (strings{"10.77.0.1", "10.77.0.2", "10.77.0.3"}));
}

TEST(SlurmHostlist, ZeroPaddingIsKept) {
  EXPECT_EQ(*expand_slurm_hostlist("n[08-10]"), (strings{"n08", "n09", "n10"}));
  EXPECT_EQ(*expand_slurm_hostlist("n[8-10]"), (strings{"n8", "n9", "n10"}));
  EXPECT_EQ(*expand_slurm_hostlist("n[098-100]"), (strings{"n098", "n099", "n100"}));
  EXPECT_EQ(*expand_slurm_hostlist("n[0-1]"), (strings{"n0", "n1"}));
}

TEST(SlurmHostlist, SeveralBracketGroupsMultiplyLastFastest) {
  EXPECT_EQ(*expand_slurm_hostlist("r[1-2]n[01-02]"), (strings{"r1n01", "r1n02", "r2n01", "r2n02"}));
  EXPECT_EQ(*expand_slurm_hostlist("r[1,3]-n[7],x"), (strings{"r1-n7", "r3-n7", "x"}));
  EXPECT_EQ(*expand_slurm_hostlist("[1-2]"), (strings{"1", "2"}));
}

TEST(SlurmHostlist, MalformedListsAreErrorsThatQuoteThePart) {
  expect_error("", "empty");
  expect_error("   ", "empty");
  expect_error("a,,b", "empty host name");
  expect_error("a,", "empty host name");
  expect_error(",a", "empty host name");
  expect_error("gpu[01-03", "never closed");
  expect_error("gpu01]", "without a '['");
  expect_error("gpu[[1]]", "nested");
  expect_error("gpu[]", "empty brackets");
  expect_error("gpu[a-b]", "'a-b' in 'gpu[a-b]'");
  expect_error("gpu[1-]", "expected a number or a range");
  expect_error("gpu[1,,2]", "expected a number or a range");
  expect_error("gpu[1-2-3]", "'1-2-3'");
  expect_error("gpu[3-1]", "runs backwards");
  expect_error("gpu[0-9999999]", "more than 65536 hosts");
  expect_error("a[0-999]b[0-999]", "more than 65536 hosts");
  expect_error("gpu[1-2] cpu1", "holds a space");
}

TEST(SlurmHostlist, TasksPerNode) {
  EXPECT_EQ(*expand_slurm_tasks_per_node("2(x3),1"), (devices{2, 2, 2, 1}));
  EXPECT_EQ(*expand_slurm_tasks_per_node("4"), devices{4});
  EXPECT_EQ(*expand_slurm_tasks_per_node("1(x2)"), (devices{1, 1}));
  for (const char* bad : {"", "x", "2(x)", "2(3)", "2(x0)", "-1", "2(x3"})
    EXPECT_FALSE(expand_slurm_tasks_per_node(bad)) << bad;
}

// --- the head's endpoint
// ------------------------------------------------------------------------------------

TEST(JoinEndpoint, HostOfTheHeadPortOfListen) {
  EXPECT_EQ(*join_endpoint("tcp://*:5555", "gpu01"), "tcp://gpu01:5555");
  EXPECT_EQ(*join_endpoint("tcp://0.0.0.0:7000", "10.0.0.4"), "tcp://10.0.0.4:7000");
  EXPECT_EQ(*join_endpoint("tcp://eth0:5555", "gpu01"), "tcp://gpu01:5555");
  EXPECT_EQ(*join_endpoint("tcp://[::]:5555", "fe80::1"), "tcp://[fe80::1]:5555");
  auto zero = join_endpoint("tcp://*:0", "gpu01");
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.message().find("no fixed port"), std::string::npos) << zero.message();
  EXPECT_FALSE(join_endpoint("tcp://*:*", "gpu01"));
  EXPECT_FALSE(join_endpoint("tcp://*:99999", "gpu01"));
  auto ipc = join_endpoint("ipc:///tmp/head", "gpu01");
  ASSERT_FALSE(ipc);
  EXPECT_NE(ipc.message().find("expected tcp://HOST:PORT"), std::string::npos) << ipc.message();
}

// --- which process is this
// ----------------------------------------------------------------------------------

TEST(ResolveLaunch, WithoutALauncherTheProcessIsAHead) {
  auto li = resolve_launch(cluster_config(), {{"PATH", "/bin"}}, "box");
  ASSERT_TRUE(li) << li.message();
  EXPECT_EQ(li->launcher, "none");
  EXPECT_EQ(li->role, process_role::head);
  EXPECT_EQ(li->join, "tcp://box:5555");  // a wildcard listen: nodes dial this host
  auto local = resolve_launch(parse(""), {}, "box");
  ASSERT_TRUE(local) << local.message();
  EXPECT_EQ(local->join, "");  // no cluster
}

TEST(ResolveLaunch, SlurmTaskZeroIsTheHeadTheOthersNodesOfTheFirstHost) {
  config cfg = cluster_config();
  auto head = resolve_launch(cfg, slurm_env(0, 3, "gpu[01-03]", "gpu01"), "ignored");
  ASSERT_TRUE(head) << head.message();
  EXPECT_EQ(head->launcher, "slurm");
  EXPECT_EQ(head->role, process_role::head);
  EXPECT_EQ(head->hosts, (strings{"gpu01", "gpu02", "gpu03"}));
  EXPECT_EQ(head->join, "tcp://gpu01:5555");
  for (int64_t procid : {1, 2}) {
    std::string host = "gpu0" + std::to_string(procid + 1);
    auto node = resolve_launch(cfg, slurm_env(procid, 3, "gpu[01-03]", host), "ignored");
    ASSERT_TRUE(node) << node.message();
    EXPECT_EQ(node->role, process_role::node);
    EXPECT_EQ(node->procid, procid);
    EXPECT_EQ(node->ntasks, 3);
    EXPECT_EQ(node->join, "tcp://gpu01:5555");
    EXPECT_EQ(node->host, host);
    EXPECT_EQ(node->node_id, host + "-0");
    EXPECT_TRUE(node->devices.devices.empty());  // the CPU target
  }
}

TEST(ResolveLaunch, NodeIdUsesTheHostNameWithoutSlurmdNodenameAndTheLocalId) {
  auto env = slurm_env(3, 4, "n[1-2]", "");
  env.erase("SLURMD_NODENAME");
  env["SLURM_LOCALID"] = "1";
  env["SLURM_TASKS_PER_NODE"] = "2(x2)";
  auto li = resolve_launch(cluster_config(), env, "n2.cluster");
  ASSERT_TRUE(li) << li.message();
  EXPECT_EQ(li->node_id, "n2.cluster-1");
  EXPECT_EQ(li->tasks_per_host, (devices{2, 2}));
  EXPECT_EQ(li->join, "tcp://n1:5555");
}

TEST(ResolveLaunch, TheStepNodeListWinsOverTheJobsAndClusterJoinOverBoth) {
  auto env = slurm_env(1, 2, "big[01-10]", "small07");
  env["SLURM_STEP_NODELIST"] = "small[07-08]";
  env.erase("SLURM_TASKS_PER_NODE");
  auto li = resolve_launch(cluster_config(), env, "x");
  ASSERT_TRUE(li) << li.message();
  EXPECT_EQ(li->join, "tcp://small07:5555");
  auto joined = resolve_launch(cluster_config({"cluster.join=tcp://head.example:6000"}), env, "x");
  ASSERT_TRUE(joined) << joined.message();
  EXPECT_EQ(joined->join, "tcp://head.example:6000");
  auto no_list = slurm_env(1, 2, "", "a");
  no_list.erase("SLURM_JOB_NODELIST");
  auto missing = resolve_launch(cluster_config(), no_list, "a");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("set cluster.join"), std::string::npos) << missing.message();
  EXPECT_TRUE(resolve_launch(cluster_config({"cluster.join=tcp://h:1"}), no_list, "a"));
}

TEST(ResolveLaunch, BadSlurmEnvironmentsAreErrorsThatSayWhatToDo) {
  auto check = [](const config& cfg, const environment& env, const std::string& fragment) {
    auto li = resolve_launch(cfg, env, "h");
    ASSERT_FALSE(li) << "accepted";
    EXPECT_NE(li.message().find(fragment), std::string::npos) << li.message();
  };
  config cl = cluster_config();
  // Several tasks with no cluster: each would train alone in the same run directory.
  check(parse(""), slurm_env(0, 3, "a[1-3]", "a1"), "cluster.listen is empty");
  check(parse(""), slurm_env(2, 3, "a[1-3]", "a3"), "srun -n 1");
  check(cl, {{"SLURM_PROCID", "1"}}, "SLURM_NTASKS is not");
  check(cl, slurm_env(3, 3, "a[1-3]", "a1"), "is not below SLURM_NTASKS");
  auto bad_id = slurm_env(0, 3, "a[1-3]", "a1");
  bad_id["SLURM_PROCID"] = "x";
  check(cl, bad_id, "SLURM_PROCID 'x'");
  check(cl, slurm_env(1, 3, "a[1-3", "a1"), "SLURM_JOB_NODELIST: host list");
  check(cluster_config({"cluster.listen=tcp://*:0"}), slurm_env(1, 3, "a[1-3]", "a2"), "no fixed port");
  // A single task without a cluster is a plain local run.
  EXPECT_TRUE(resolve_launch(parse(""), slurm_env(0, 1, "a1", "a1"), "a1"));
}

// --- devices
// ------------------------------------------------------------------------------------------------

TEST(NodeDevices, PrecedenceConfigThenVisibleDevicesThenLocalIdThenCudaDevices) {
  config cpu = parse("");
  EXPECT_TRUE(choose_node_devices(cpu, {{"CUDA_VISIBLE_DEVICES", "0,1"}}, 0, 1).devices.empty());
  config cuda = parse("target: cuda\ncuda: {devices: [0, 1, 2, 3]}\n");
  config pinned = parse("target: cuda\ncluster: {node_devices: [5]}\n");
  auto c = choose_node_devices(pinned, {{"CUDA_VISIBLE_DEVICES", "0,1"}}, 0, 1);
  EXPECT_EQ(c.devices, devices{5});
  EXPECT_EQ(c.from, "cluster.node_devices");
  // Slurm hands a task GPUs 2 and 3: inside the process they are CUDA devices 0 and 1.
  c = choose_node_devices(cuda, {{"CUDA_VISIBLE_DEVICES", "2,3"}, {"SLURM_LOCALID", "1"}}, 1, 2);
  EXPECT_EQ(c.devices, (devices{0, 1}));
  EXPECT_EQ(c.from, "CUDA_VISIBLE_DEVICES=2,3");
  EXPECT_EQ(choose_node_devices(cuda, {{"CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb,GPU-cc"}}, 0, 1).devices,
            (devices{0, 1, 2}));
  EXPECT_EQ(choose_node_devices(cuda, {{"CUDA_VISIBLE_DEVICES", "0,-1,1"}}, 0, 1).devices, devices{0});
  EXPECT_TRUE(choose_node_devices(cuda, {{"CUDA_VISIBLE_DEVICES", ""}}, 0, 1).devices.empty());
  EXPECT_TRUE(choose_node_devices(cuda, {{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}, 0, 1).devices.empty());
  // Two tasks on a host that share its GPUs unbound: task i takes GPU i.
  c = choose_node_devices(cuda, {{"SLURM_LOCALID", "1"}}, 1, 2);
  EXPECT_EQ(c.devices, devices{1});
  EXPECT_NE(c.from.find("SLURM_LOCALID=1"), std::string::npos) << c.from;
  // One task on the host: the config's devices.
  c = choose_node_devices(cuda, {{"SLURM_LOCALID", "0"}}, 0, 1);
  EXPECT_EQ(c.devices, (devices{0, 1, 2, 3}));
  EXPECT_EQ(c.from, "cuda.devices");
}

TEST(NodeDevices, ACudaNodeThatSeesNoGpuIsAnError) {
  config cfg = cluster_config({"target=cuda"});
  auto env = slurm_env(1, 2, "g[1-2]", "g2");
  env["CUDA_VISIBLE_DEVICES"] = "";
  auto li = resolve_launch(cfg, env, "g2");
  ASSERT_FALSE(li);
  EXPECT_NE(li.message().find("--gpus-per-node"), std::string::npos) << li.message();
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  li = resolve_launch(cfg, env, "g2");
  ASSERT_TRUE(li) << li.message();
  EXPECT_EQ(li->devices.devices, (devices{0, 1}));
}

// --- the plan
// -----------------------------------------------------------------------------------------------

TEST(PlacementPlan, OneHeadAndTwoNodesOfTheClusterConfig) {
  config cfg = cluster_config();
  auto li = resolve_launch(cfg, {}, "headbox");
  ASSERT_TRUE(li) << li.message();
  auto plan = plan_placement(cfg, *li);
  EXPECT_TRUE(plan.warnings.empty()) << all_warnings(plan);
  EXPECT_FALSE(plan.curve);
  EXPECT_EQ(plan.join, "tcp://headbox:5555");
  ASSERT_EQ(plan.head.actors.size(), 5u);
  EXPECT_EQ(plan.head.actors[0].role, "conductor");
  EXPECT_EQ(plan.head.actors[1].role, "generator");
  EXPECT_EQ(plan.head.actors[2].role, "replay_buffer");
  EXPECT_EQ(plan.head.actors[3].role, "learner");
  EXPECT_EQ(plan.head.actors[4].role, "verifier");  // verdicts are made on the head
  ASSERT_EQ(plan.nodes.size(), 2u);
  for (const auto& n : plan.nodes) {
    EXPECT_EQ(n.role, process_role::node);
    EXPECT_EQ(n.procid, -1);
    ASSERT_EQ(n.actors.size(), 2u);
    EXPECT_EQ(n.actors[0].role, "benchmarker");
    EXPECT_EQ(n.actors[1].role, "compiler");
    EXPECT_EQ(n.actors[1].count, 2);
    EXPECT_TRUE(n.actors[0].devices.empty());  // CPU
  }
  std::string text = format_placement(plan);
  const std::string expected =
      "placement plan: target cpu, 1 head + 2 nodes\n"
      "endpoint: the head listens on tcp://*:5555; nodes join tcp://headbox:5555\n"
      "CURVE: off, so the head listens on loopback only: nodes of other hosts cannot join "
      "(configs/cluster.yaml says how to turn CURVE on)\n"
      "head (crucible train):\n"
      "  conductor       x1   cpu\n"
      "  generator       x1   cpu\n"
      "  replay_buffer   x1   cpu\n"
      "  learner         x1   cpu\n"
      "  verifier        x1   cpu\n"
      "node 1 (crucible node --join tcp://headbox:5555):\n"
      "  benchmarker     x1   cpu\n"
      "  compiler        x2   cpu\n"
      "node 2 (crucible node --join tcp://headbox:5555):\n"
      "  benchmarker     x1   cpu\n"
      "  compiler        x2   cpu\n"
      "pipeline:\n"
      "  compile    compiler      head x0, nodes x4\n"
      "  benchmark  benchmarker   head x0, nodes x2\n"
      "  verify     verifier      head x1, nodes x0\n"
      "warnings: none\n";
  EXPECT_EQ(text, expected);
}

TEST(PlacementPlan, CudaNodesWithTwoDevicesEachUnderSlurm) {
  config cfg = cluster_config(
      {"target=cuda", "cluster.node_roles.benchmarker=2", "roles.benchmarker=1", "cuda.devices=[0]"});
  auto env = slurm_env(0, 3, "gpu[01-03]", "gpu01");
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  auto li = resolve_launch(cfg, env, "gpu01");
  ASSERT_TRUE(li) << li.message();
  auto plan = plan_placement(cfg, *li);
  EXPECT_TRUE(plan.warnings.empty()) << all_warnings(plan);
  EXPECT_EQ(plan.self, 0);
  EXPECT_EQ(plan.head.host, "gpu01");
  ASSERT_EQ(plan.nodes.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& n = plan.nodes[i];
    EXPECT_EQ(n.procid, static_cast<int64_t>(i + 1));
    EXPECT_EQ(n.host, "gpu0" + std::to_string(i + 2));
    EXPECT_EQ(n.node_id, n.host + "-0");
    EXPECT_EQ(n.actors[0].role, "benchmarker");
    EXPECT_EQ(n.actors[0].devices, (devices{0, 1}));
  }
  std::string text = format_placement(plan);
  EXPECT_NE(
      text.find("placement plan: target cuda, 1 head + 2 nodes (Slurm; this process is task 0, the head)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("endpoint: the head listens on tcp://*:5555; nodes join tcp://gpu01:5555\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("head (task 0 on gpu01):\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  benchmarker     x1   cuda:0\n"), std::string::npos) << text;  // the head's own
  EXPECT_NE(text.find("node 2 (task 2 on gpu03, node id gpu03-0; GPUs from CUDA_VISIBLE_DEVICES=0,1):\n"
                      "  benchmarker     x2   cuda:0, cuda:1\n"
                      "  compiler        x2   cpu\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  benchmark  benchmarker   head x1, nodes x4\n"), std::string::npos) << text;
  // A node's own plan says so.
  env = slurm_env(2, 3, "gpu[01-03]", "gpu03");
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  li = resolve_launch(cfg, env, "gpu03");
  ASSERT_TRUE(li) << li.message();
  EXPECT_NE(format_placement(plan_placement(cfg, *li)).find("this process is task 2, node 2"),
            std::string::npos);
}

TEST(PlacementPlan, TwoTasksPerHostSplitTheHostsGpus) {
  config cfg = cluster_config({"target=cuda"});
  environment env = {{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "4"},
                     {"SLURM_LOCALID", "0"},
                     {"SLURM_JOB_NODELIST", "g[1-2]"},
                     {"SLURM_TASKS_PER_NODE", "2(x2)"},
                     {"SLURMD_NODENAME", "g1"}};
  auto li = resolve_launch(cfg, env, "g1");
  ASSERT_TRUE(li) << li.message();
  auto plan = plan_placement(cfg, *li);
  ASSERT_EQ(plan.nodes.size(), 3u);
  EXPECT_EQ(plan.nodes[0].node_id, "g1-1");  // task 1 shares g1 with the head
  EXPECT_EQ(plan.nodes[0].actors[0].devices, devices{1});
  EXPECT_EQ(plan.nodes[1].node_id, "g2-0");
  EXPECT_EQ(plan.nodes[1].actors[0].devices, devices{0});
  EXPECT_EQ(plan.nodes[2].node_id, "g2-1");
  EXPECT_EQ(plan.nodes[2].actors[0].devices, devices{1});
}

TEST(PlacementPlan, WarningsThatMatter) {
  auto plan_of = [](const config& cfg, const environment& env = {}) {
    auto li = resolve_launch(cfg, env, "h");
    EXPECT_TRUE(li) << li.message();
    return plan_placement(cfg, li ? *li : launch_info{});
  };
  // A stage nobody serves.
  auto p = plan_of(cluster_config({"roles.verifier=0"}));
  EXPECT_TRUE(has_warning(p, "pipeline stage 'verify' has no verifier")) << all_warnings(p);
  p = plan_of(cluster_config({"cluster.nodes=0"}));
  EXPECT_TRUE(has_warning(p, "no node is planned")) << all_warnings(p);
  p = plan_of(parse("roles: {verifier: 0}\n"));
  EXPECT_TRUE(has_warning(p, "the run cannot start")) << all_warnings(p);
  // Nodes with nothing to join.
  p = plan_of(parse("cluster: {nodes: 2}\n"));
  EXPECT_TRUE(has_warning(p, "cluster.listen is empty")) << all_warnings(p);
  EXPECT_TRUE(p.nodes.empty());
  // CURVE on one side only.
  p = plan_of(
      cluster_config({"cluster.secret_key=/nonexistent/k.key", "cluster.server_key=/nonexistent/k.pub"}));
  EXPECT_TRUE(p.curve);
  EXPECT_TRUE(has_warning(p, "cluster.authorized_keys is not: the head refuses")) << all_warnings(p);
  EXPECT_TRUE(has_warning(p, "'/nonexistent/k.key' does not exist")) << all_warnings(p);
  p = plan_of(
      cluster_config({"cluster.secret_key=/nonexistent/k.key", "cluster.authorized_keys=/nonexistent/k"}));
  EXPECT_TRUE(has_warning(p, "cluster.server_key (the head's public key) is not")) << all_warnings(p);
  p = plan_of(cluster_config({"cluster.authorized_keys=keys/"}));
  EXPECT_FALSE(p.curve);
  EXPECT_TRUE(has_warning(p, "CURVE is off because cluster.secret_key is empty")) << all_warnings(p);
  // Benchmarkers sharing a GPU.
  p = plan_of(cluster_config({"target=cuda", "cluster.node_roles.benchmarker=3", "cuda.devices=[0, 1]"}));
  EXPECT_TRUE(has_warning(p, "nodes: 3 benchmarkers on 2 GPU(s)")) << all_warnings(p);
  // Node roles the head never uses (those it cannot give a node are config errors: Config tests).
  p = plan_of(cluster_config({"cluster.node_roles.audit=1"}));
  EXPECT_TRUE(has_warning(p, "no pipeline stage uses role 'audit'")) << all_warnings(p);
  // A head on loopback that Slurm nodes on other hosts cannot reach.
  p = plan_of(cluster_config({"cluster.listen=tcp://127.0.0.1:5555"}), slurm_env(0, 3, "a[1-3]", "a1"));
  EXPECT_TRUE(has_warning(p, "binds loopback")) << all_warnings(p);
  // cluster.nodes that Slurm contradicts: Slurm's count, and a note (nothing is wrong).
  p = plan_of(cluster_config({"cluster.nodes=5"}), slurm_env(0, 3, "a[1-3]", "a1"));
  EXPECT_TRUE(p.warnings.empty()) << all_warnings(p);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0],
            "Slurm started 3 task(s): 1 head + 2 node(s) (cluster.nodes, 5, applies to launches by hand)");
  EXPECT_NE(format_placement(p).find("note: Slurm started 3 task(s)"), std::string::npos);
  EXPECT_EQ(p.nodes.size(), 2u);
}

TEST(PlacementPlan, OneProcessWithoutACluster) {
  config cfg = parse("");
  auto li = resolve_launch(cfg, {}, "h");
  ASSERT_TRUE(li);
  auto plan = plan_placement(cfg, *li);
  EXPECT_TRUE(plan.nodes.empty());
  EXPECT_TRUE(plan.warnings.empty()) << all_warnings(plan);
  std::string text = format_placement(plan);
  EXPECT_NE(text.find("endpoint: none (one process"), std::string::npos) << text;
  EXPECT_NE(text.find("  compile    compiler      head x2, nodes x0\n"), std::string::npos) << text;
}

// --- a node started by a launcher leaves when its head is gone
// ----------------------------------------------

TEST(HeadAbsence, LeavesAfterTheHeadIsGoneOrNeverCame) {
  using namespace std::chrono_literals;
  auto t0 = head_absence::clock::time_point{} + 1h;
  head_absence watch(60s, 10s, t0);
  EXPECT_FALSE(watch.should_leave(t0 + 59s));  // the head may still be starting
  EXPECT_TRUE(watch.should_leave(t0 + 61s));
  watch.answered(t0 + 5s);
  EXPECT_FALSE(watch.should_leave(t0 + 14s));
  EXPECT_TRUE(watch.should_leave(t0 + 16s));
  watch.answered(t0 + 16s);
  EXPECT_FALSE(watch.should_leave(t0 + 20s));
  auto c = parse("cluster: {heartbeat_ms: 1000, liveness: 3}\n");
  EXPECT_EQ(head_absence::for_config(c, t0).gone_grace(), std::chrono::seconds(30));
  c = parse("cluster: {heartbeat_ms: 100, liveness: 2}\n");
  EXPECT_EQ(head_absence::for_config(c, t0).gone_grace(), std::chrono::seconds(10));  // the floor
}

// --- the shipped files
// --------------------------------------------------------------------------------------

TEST(ClusterConfig, ParsesAndDescribesAHeadWithTwoNodes) {
  auto c = load_config(repo + "/configs/cluster.yaml");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->target, "cpu");
  EXPECT_EQ(c->cluster.listen, "tcp://*:5555");
  EXPECT_EQ(c->cluster.nodes, 2);
  EXPECT_EQ(c->roles.at("compiler"), 0);
  EXPECT_EQ(c->roles.at("benchmarker"), 0);
  EXPECT_EQ(c->roles.at("verifier"), 1) << "verdicts are made on the head";
  EXPECT_EQ(c->cluster.node_roles.count("verifier"), 0u);
  EXPECT_EQ(c->cluster.node_roles.at("benchmarker"), 1);
  EXPECT_TRUE(c->cluster.secret_key.empty());
  // The GPU variant its comments describe parses too, and round-trips through to_yaml.
  auto cuda =
      load_config(repo + "/configs/cluster.yaml", {"target=cuda", "cluster.node_roles.benchmarker=2"});
  ASSERT_TRUE(cuda) << cuda.message();
  EXPECT_EQ(cuda->target, "cuda");
  EXPECT_EQ(cuda->cluster.node_roles.at("benchmarker"), 2);
  EXPECT_NE(to_yaml(*cuda).find("nvcc"), std::string::npos) << "the CUDA target's compiler is nvcc";
  auto again = parse_config(to_yaml(*c), {}, "dumped");
  ASSERT_TRUE(again) << again.message();
  EXPECT_EQ(to_yaml(*again), to_yaml(*c));
}

TEST(SlurmBatchScript, ReferencesTheClusterConfigAndResolvesIntoOneHeadAndNodes) {
  const std::string script = read_file(repo + "/examples/slurm/crucible.sbatch");
  ASSERT_FALSE(script.empty()) << "examples/slurm/crucible.sbatch is missing";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(script, m, std::regex(R"(#SBATCH --nodes=(\d+))")));
  const int64_t nodes = std::stoll(m[1]);
  ASSERT_GE(nodes, 2);
  EXPECT_TRUE(std::regex_search(script, std::regex(R"(#SBATCH --ntasks-per-node=1\b)")));
  ASSERT_TRUE(std::regex_search(script, m, std::regex(R"(#SBATCH --gpus-per-node=(\d+))")));
  const int64_t gpus = std::stoll(m[1]);
  ASSERT_TRUE(std::regex_search(script, m, std::regex(R"(CONFIG=\$\{CONFIG:-([^}]+)\})")));
  const std::string config_path = repo + "/" + m[1].str();
  EXPECT_TRUE(
      std::regex_search(script, std::regex(R"(srun [^\n]*\\\n\s*"\$CRUCIBLE" train --config "\$CONFIG")")))
      << "the script runs srun crucible train --config $CONFIG";
  EXPECT_NE(script.find("--set target=cuda"), std::string::npos);
  EXPECT_NE(script.find("--set cluster.node_roles.benchmarker=\"$GPUS_PER_NODE\""), std::string::npos);

  // What srun gives each of its tasks in a job of that shape.
  auto cfg =
      load_config(config_path, {"target=cuda", "cluster.node_roles.benchmarker=" + std::to_string(gpus)});
  ASSERT_TRUE(cfg) << cfg.message();
  std::string visible;
  for (int64_t g = 0; g < gpus; ++g) visible += (g ? "," : "") + std::to_string(g);
  const std::string nodelist = "gpu[01-" + std::string(nodes < 10 ? "0" : "") + std::to_string(nodes) + "]";
  int heads = 0, workers = 0;
  for (int64_t procid = 0; procid < nodes; ++procid) {
    auto env = slurm_env(procid, nodes, nodelist,
                         "gpu" + std::string(procid + 1 < 10 ? "0" : "") + std::to_string(procid + 1));
    env["CUDA_VISIBLE_DEVICES"] = visible;
    auto li = resolve_launch(*cfg, env, "ignored");
    ASSERT_TRUE(li) << li.message();
    EXPECT_EQ(li->join, "tcp://gpu01:5555");
    if (li->role == process_role::head) {
      ++heads;
      EXPECT_EQ(procid, 0);
      auto plan = plan_placement(*cfg, *li);
      EXPECT_EQ(static_cast<int64_t>(plan.nodes.size()), nodes - 1);
      EXPECT_TRUE(plan.warnings.empty()) << all_warnings(plan);
      for (const auto& n : plan.nodes) EXPECT_EQ(static_cast<int64_t>(n.actors[0].devices.size()), gpus);
    } else {
      ++workers;
      EXPECT_EQ(static_cast<int64_t>(li->devices.devices.size()), gpus);
    }
  }
  EXPECT_EQ(heads, 1);
  EXPECT_EQ(workers, nodes - 1);
}

}  // namespace
}  // namespace crucible::runtime
