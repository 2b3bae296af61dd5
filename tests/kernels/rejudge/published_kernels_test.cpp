// Published kernels read into one shape: CUDA-L1's JSON lines with their claims, a folder of solutions paired
// with a checkout's problems, and a checkout's problems as their own candidates (A/A). Files written here
// and in tests/data/kernelbench (written for the tests; no KernelBench or CUDA-L1 file is in the repository).
#include "kernels/rejudge/published_kernels.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace crucible::kernels {
namespace {

namespace fs = std::filesystem;

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("crucible-rejudge-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(PublishedKernels, ReadsCudaL1RecordsWithTheirClaims) {
  auto dir = scratch("jsonl");
  write(
      dir / "h100.json",
      R"({"level_id": 1, "task_id": 19, "ref_code": "class Model: pass", "custom_code": "class ModelNew: pass", )"
      R"("score_default": 1.147, "score_torch_compile_default": 2.5, "score_cuda_graph": 0.9, "score_cudnn": null})"
      "\n\n"
      R"({"level_id": 1, "task_id": 20, "ref_code": "class Model: pass", "custom_code": "", "score_default": null})"
      "\n"
      R"({"level_id": 2, "task_id": 3, "ref_code": "class Model: pass", "custom_code": "x"})"
      "\n");
  auto all = read_cuda_l1_jsonl((dir / "h100.json").string());
  ASSERT_TRUE(all) << all.message();
  ASSERT_EQ(all->size(), 3u);
  const auto& k = (*all)[0];
  EXPECT_EQ(k.level, 1);
  EXPECT_EQ(k.id, 19);
  EXPECT_EQ(k.name, "kb1_19");
  EXPECT_EQ(k.origin, "h100.json line 1");
  EXPECT_EQ(k.candidate_source, "class ModelNew: pass");
  EXPECT_DOUBLE_EQ(k.claimed_vs_eager(), 1.147);
  ASSERT_EQ(k.claimed.size(), 3u);  // a null score is no claim
  EXPECT_EQ(k.claimed[1].first, "torch.compile");
  EXPECT_EQ(k.claimed[2].first, "cuda graph");
  EXPECT_TRUE((*all)[1].candidate_source.empty());
  EXPECT_EQ((*all)[1].claimed_vs_eager(), 0.0);
  EXPECT_EQ((*all)[2].origin, "h100.json line 4");
  auto level2 = read_cuda_l1_jsonl((dir / "h100.json").string(), 2);
  ASSERT_TRUE(level2);
  ASSERT_EQ(level2->size(), 1u);
  EXPECT_EQ(level2->front().id, 3);
  fs::remove_all(dir);
}

TEST(PublishedKernels, ABrokenRecordIsAnErrorNamingItsLine) {
  auto dir = scratch("broken");
  write(dir / "a.json", R"({"level_id": 1, "task_id": 1, "ref_code": "x"})"
                        "\n{not json\n");
  auto r = read_cuda_l1_jsonl((dir / "a.json").string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("a.json line 2"), std::string::npos) << r.message();
  write(dir / "b.json", R"({"level_id": "1", "task_id": 1, "ref_code": "x"})");
  EXPECT_FALSE(read_cuda_l1_jsonl((dir / "b.json").string()));
  write(dir / "c.json", R"({"level_id": 1, "task_id": 1, "custom_code": "x"})");
  auto c = read_cuda_l1_jsonl((dir / "c.json").string());
  ASSERT_FALSE(c);
  EXPECT_NE(c.message().find("no ref_code"), std::string::npos);
  EXPECT_FALSE(read_cuda_l1_jsonl((dir / "missing.json").string()));
  fs::remove_all(dir);
}

TEST(PublishedKernels, ASolutionFolderIsPairedWithItsCheckoutsProblems) {
  auto dir = scratch("folder");
  write(dir / "level1" / "2_mine.py", "class ModelNew: pass\n");
  write(dir / "run" / "level_2_problem_7_sample_0_kernel.py", "class ModelNew: pass  # 7\n");
  write(dir / "notes.txt", "not a solution");
  auto r = read_solution_folder(dir.string(), data);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "kb1_2_Scaled_relu");
  EXPECT_NE((*r)[0].problem_source.find("class Model"), std::string::npos);
  EXPECT_EQ((*r)[1].name, "kb2_7_Linear_gelu");
  EXPECT_NE((*r)[1].candidate_source.find("# 7"), std::string::npos);
  EXPECT_TRUE((*r)[1].claimed.empty());
  write(dir / "level1" / "99_orphan.py", "class ModelNew: pass\n");
  auto orphan = read_solution_folder(dir.string(), data);
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.message().find("99_orphan.py"), std::string::npos) << orphan.message();
  auto level2 = read_solution_folder(dir.string(), data, 2);
  ASSERT_TRUE(level2) << level2.message();
  EXPECT_EQ(level2->size(), 1u);
  EXPECT_FALSE(read_solution_folder((dir / "nothing").string(), data));
  fs::remove_all(dir);
}

TEST(PublishedKernels, SelfCandidatesAreEachProblemAsItsOwnModelNew) {
  auto r = self_candidates(data, 1);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->size(), 2u);
  for (const auto& k : *r) {
    EXPECT_EQ(k.candidate_source.rfind(k.problem_source, 0), 0u);
    EXPECT_NE(k.candidate_source.find("ModelNew = Model"), std::string::npos);
  }
}

TEST(PublishedKernels, CodeFeaturesAreWhatTheSourceContains) {
  const std::string cuda = R"(
import torch
from torch.utils.cpp_extension import load_inline
src = """__global__ void k(float* x) {}"""
class ModelNew(torch.nn.Module):
    def forward(self, x):
        try:
            return mod.k(x)
        except Exception:
            return torch.relu(x)
)";
  auto f = code_features(cuda);
  ASSERT_EQ(f.size(), 2u);  // "load_inline" in the import is not a call
  EXPECT_EQ(f[0], code_feature::cuda_kernel);
  EXPECT_EQ(f[1], code_feature::try_except);
  EXPECT_EQ(code_features("m = load_inline(name='x')\n"),
            std::vector<code_feature>{code_feature::load_inline});
  EXPECT_EQ(code_features("import triton\n@triton.jit\ndef k(): pass\n"),
            std::vector<code_feature>{code_feature::triton});
  EXPECT_TRUE(code_features("x = 'retry: later'\n").empty());
  EXPECT_STREQ(wire_name(code_feature::try_except), "try_except");
}

}  // namespace
}  // namespace crucible::kernels
