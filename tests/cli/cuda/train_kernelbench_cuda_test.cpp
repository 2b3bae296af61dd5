// A training run on KernelBench tasks on the CUDA target (label gpu): the problem read on the run's device,
// a served model (a loopback server) answering with a correct ModelNew, one that writes its input in place
// and one without code, each judged by the CUDA worker in a child forked for it.

#include <cuda_runtime.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/cli/cli_support.hpp"
#include "tests/cli/kernelbench_answers.hpp"
#include "tests/policies/remote/loopback_server.hpp"

namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";
const std::string config = std::string(CRUCIBLE_TEST_DATA_DIR) + "/../../configs/kernelbench.yaml";

TEST(TrainKernelBenchCuda, AServedModelsModelNewAnswersAreJudgedOnTheDevice) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  crucible::policies::test::loopback_server server(crucible::test::kernelbench_answers, 1 << 20);
  const std::string dir = crucible::test::fresh_temp_dir("train-kernelbench-cuda");
  auto r = crucible::test::run_command(
      std::string(CRUCIBLE_BINARY_DIR) + "/crucible train --config " + config + " --set target=cuda" +
      " --set run.dir=" + dir + " --set tasks.kernelbench_dir=" + data +
      " --set tasks.include=[kb1_2_Scaled_relu] --set policy.remote.url=" + server.url() +
      " --set run.max_steps=1 --set run.max_minutes=6 --set learner.group_size=3"
      " --set async.groups_in_flight=1 --set benchmark.timeout_s=120 2>&1");
  if (r.out.find("no KernelBench support") != std::string::npos) GTEST_SKIP() << "built without Python";
  ASSERT_EQ(r.exit_code, 0) << r.out;
  crucible::test::expect_each_kernelbench_answer_judged(dir, r.out);
  EXPECT_NE(r.out.find("0 lost"), std::string::npos) << r.out;
}

}  // namespace
