// `crucible train --dry-run` as a user runs it: the resolved config and the placement plan on stdout (the
// plan as YAML comments, so the output is itself a config), nothing started, and under a simulated Slurm
// environment the plan of the process srun would have started.

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"

namespace {

namespace fs = std::filesystem;

crucible::test::command_result crucible(const std::string& args, const std::string& env = "",
                                        bool with_stderr = true) {
  // Whatever launcher the tests themselves run under, the binary sees only the environment given here.
  std::string cmd = "env";
  for (const char* var :
       {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_NPROCS", "SLURM_LOCALID",
        "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURMD_NODENAME",
        "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "CUDA_VISIBLE_DEVICES"})
    cmd += std::string(" -u ") + var;
  cmd += " " + env + " " + std::string(CRUCIBLE_BINARY_DIR) + "/crucible " + args +
         (with_stderr ? " 2>&1" : " 2>/dev/null");
  return crucible::test::run_command(cmd);
}

using crucible::test::fresh_temp_dir;

const std::string cluster_yaml = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../configs/cluster.yaml";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TrainDryRun, PrintsTheResolvedConfigAndThePlanAndStartsNothing) {
  std::string dir = fresh_temp_dir("cluster");
  auto r = crucible("train --config " + cluster_yaml + " --dry-run --set run.dir=" + dir, "", false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "run:\n  dir: " + dir + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "cluster:\n  listen: tcp://*:5555\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n# placement plan: target cpu, 1 head + 2 nodes\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "# head (crucible train):\n#   conductor       x1   cpu\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "# node 2 (crucible node --join tcp://")) << r.out;
  EXPECT_TRUE(contains(r.out, "#   compile    compiler      head x0, nodes x4\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "# warnings: none\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "# tasks (")) << r.out;
  EXPECT_FALSE(fs::exists(dir)) << "a dry run created the run directory";

  // The whole output is a config that resolves to the same config.
  std::string saved = dir + ".yaml";
  std::ofstream(saved) << r.out;
  auto again = crucible("train --config " + saved + " --print-config", "", false);
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(again.out, r.out.substr(0, r.out.find("\n# placement plan")));
  fs::remove(saved);
}

TEST(TrainDryRun, TheDefaultConfigIsOneProcess) {
  auto r = crucible("train --dry-run --set run.dir=" + fresh_temp_dir("local"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "# endpoint: none (one process: every actor runs in the head)\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "#   compile    compiler      head x2, nodes x0\n")) << r.out;
}

TEST(TrainDryRun, WarningsAndErrorsOfAConfigThatWouldNotRun) {
  // A stage nobody serves is a warning in the plan; a task that does not exist ends with exit code 2.
  auto r = crucible("train --config " + cluster_yaml +
                    " --dry-run --set 'cluster.node_roles={compiler: 1, benchmarker: 0}'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "#   - pipeline stage 'benchmark' has no benchmarker")) << r.out;
  // Verify without a verifier on the head cannot start, nodes or not: verdicts are the head's.
  r = crucible("train --config " + cluster_yaml + " --dry-run --set roles.verifier=0");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "its verdicts are made on the head: no node may serve it")) << r.out;
  r = crucible("train --config " + cluster_yaml + " --dry-run --set tasks.include=[no_such_task]");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "crucible train: tasks.include: no task named 'no_such_task'")) << r.out;
}

// What `train` would refuse, --dry-run refuses too, with exit code 2: a pipeline out of order, a singleton
// role at 0, a stage no role serves without a cluster. `train` refuses them before it makes the run's folder.
TEST(TrainDryRun, APlanThatCannotStartEndsWithExitCode2) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set 'pipeline=[compile, verify, benchmark]'",
       "pipeline: stage 'verify' comes before 'benchmark' ([compile, verify, benchmark])"},
      {"--set 'pipeline=[compile, benchmark]'", "pipeline: stage 'verify' is missing"},
      {"--set roles.learner=0", "roles.learner: expected >= 1"},
      {"--set roles.verifier=0", "pipeline: stage 'verify' needs at least one 'verifier' in roles"},
  };
  for (const auto& [set, why] : cases) {
    std::string dir = fresh_temp_dir("cannot-start");
    auto r = crucible("train --dry-run --set run.dir=" + dir + " " + set);
    EXPECT_EQ(r.exit_code, 2) << set << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "crucible train: the run cannot start: " + why)) << r.out;
    r = crucible("train --set run.dir=" + dir + " " + set);
    EXPECT_EQ(r.exit_code, 2) << set << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "crucible train: " + why)) << r.out;
    EXPECT_FALSE(fs::exists(dir)) << "a config error leaves no run directory: " << set;
  }
}

TEST(TrainDryRun, UnderSlurmThePlanIsThatOfTheTaskSrunStarted) {
  const std::string slurm =
      "SLURM_NTASKS=3 SLURM_JOB_NODELIST=gpu[01-03] SLURM_LOCALID=0 SLURM_TASKS_PER_NODE='1(x3)' "
      "CUDA_VISIBLE_DEVICES=0,1 ";
  const std::string gpu = " --set target=cuda --set cluster.node_roles.benchmarker=2";
  auto head = crucible("train --config " + cluster_yaml + " --dry-run" + gpu,
                       slurm + "SLURM_PROCID=0 SLURMD_NODENAME=gpu01");
  EXPECT_EQ(head.exit_code, 0) << head.out;
  EXPECT_TRUE(contains(head.out,
                       "# placement plan: target cuda, 1 head + 2 nodes (Slurm; this process is task 0, "
                       "the head)\n"))
      << head.out;
  EXPECT_TRUE(contains(head.out, "nodes join tcp://gpu01:5555\n")) << head.out;
  EXPECT_TRUE(contains(head.out,
                       "# node 1 (task 1 on gpu02, node id gpu02-0; GPUs from CUDA_VISIBLE_DEVICES=0,1):\n"
                       "#   benchmarker     x2   cuda:0, cuda:1\n"))
      << head.out;
  // A node's dry run prints its plan and returns: it does not join anything.
  auto node = crucible("train --config " + cluster_yaml + " --dry-run" + gpu,
                       slurm + "SLURM_PROCID=2 SLURMD_NODENAME=gpu03");
  EXPECT_EQ(node.exit_code, 0) << node.out;
  EXPECT_TRUE(contains(node.out, "this process is task 2, node 2)")) << node.out;
  // Several tasks without a cluster: each would train alone, so every task refuses.
  auto alone = crucible("train --dry-run", slurm + "SLURM_PROCID=1");
  EXPECT_EQ(alone.exit_code, 2) << alone.out;
  EXPECT_TRUE(contains(alone.out, "cluster.listen is empty, so each would train alone")) << alone.out;
}

}  // namespace
