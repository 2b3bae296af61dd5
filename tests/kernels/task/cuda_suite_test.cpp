// The shipped CUDA suite (kernels/tasks/cuda): it loads, covers the KernelBench level 1 and 2 families,
// and every task is large enough by the eager cost model in kernels/tasks/cuda/README.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"
#include "kernels/task/task_loader.hpp"

namespace crucible::kernels {
namespace {

// The modelled LibTorch eager time on an H200 in ms: per op max(bytes / 3.5e12 B/s, flops / 40e12 FLOP/s)
// + 6 us launch. Bytes: the running value read, side inputs read, output written (float32); ops that need
// statistics first (softmax, norms) read their input twice; eager attention also writes and reads the
// [B, H, S, Skv] scores four times (matmul out, scale, softmax in/out, matmul in).
double modelled_eager_ms(const task_spec& task) {
  auto shapes = infer_shapes(task);
  if (!shapes) return -1;
  auto side = [&](const std::string& name) { return task.inputs[input_index(task, name)].shape; };
  double total = 0;
  for (size_t i = 0; i < task.ops.size(); ++i) {
    const auto& op = task.ops[i];
    const op_class cls = find_op(op.op)->cls;
    const shape_t& before = i == 0 ? shapes->input : shapes->after[i - 1];
    const shape_t& after = shapes->after[i];
    double in = static_cast<double>(numel(before)), out = static_cast<double>(numel(after)), sides = 0;
    for (const auto& a : op.args) sides += static_cast<double>(numel(side(a)));
    const bool two_pass = cls == op_class::row_norm || cls == op_class::channel_norm;
    double bytes = 4 * ((two_pass ? 2 : 1) * in + sides + out), flops = 0;
    if (cls == op_class::gemm || cls == op_class::bmm) flops = 2 * out * static_cast<double>(before.back());
    if (cls == op_class::conv) {
      const shape_t w = side(op.args[0]);
      const double per = static_cast<double>(numel(w)) / static_cast<double>(w[0]);  // C/g (or O) * k..
      flops = op.op.rfind("conv_transpose", 0) == 0 ? 2 * in * per : 2 * out * per;
    }
    if (cls == op_class::attention) {
      const double scores = static_cast<double>(before[0] * before[1] * before[2] * side(op.args[0])[2]);
      flops = 4 * scores * static_cast<double>(before[3]);
      bytes += 4 * 4 * scores;
    }
    total += std::max(bytes / 3.5e12, flops / 40e12) + 6e-6;
  }
  return total * 1e3;
}

std::string cuda_dir() {
  return default_task_dir() + "/cuda";
}

TEST(CudaSuite, LoadsAndCoversTheFamilies) {
  auto suite = load_task_suite(cuda_dir(), "cuda");
  ASSERT_TRUE(suite) << suite.message();
  EXPECT_GE(suite->size(), 44u);
  auto all = load_task_suite(cuda_dir());
  ASSERT_TRUE(all) << all.message();
  EXPECT_EQ(all->size(), suite->size()) << "every task under cuda/ targets cuda";
  std::set<std::string> families, ops;
  for (const auto& t : *suite) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.targets, std::vector<std::string>{"cuda"});
    EXPECT_FALSE(t.description.empty());
    for (const auto& in : t.inputs) EXPECT_EQ(in.dtype, "float32");
    families.insert(t.family);
    for (const auto& op : t.ops) ops.insert(op.op);
  }
  for (const char* f : {"gemm", "gemv", "bmm", "conv", "conv_transpose", "activation", "norm", "pool",
                        "reduction", "softmax", "loss", "scan", "attention", "fused"})
    EXPECT_TRUE(families.count(f)) << "no task of family " << f;
  // Every op added for the CUDA target appears somewhere, and so do the GEMM and row ops.
  for (size_t i = 0; i < op_catalog().size(); ++i) {
    const auto& name = op_catalog()[i].name;
    if (i >= 26 || name == "matmul" || name == "softmax" || name == "log_softmax" || name == "layer_norm" ||
        name == "rms_norm" || name == "row_sum" || name == "row_max")
      EXPECT_TRUE(ops.count(name)) << "no task uses " << name;
  }
}

TEST(CudaSuite, SizedForAnH200WithinTheWorkerLimits) {
  auto suite = load_task_suite(cuda_dir(), "cuda");
  ASSERT_TRUE(suite) << suite.message();
  std::string table = "| task | family | input -> output | est. eager ms |\n|---|---|---|---:|\n";
  for (const auto& t : *suite) {
    SCOPED_TRACE(t.name);
    const double ms = modelled_eager_ms(t);
    EXPECT_GE(ms, 0.15) << "too small: launch overhead would dominate";
    int64_t total_bytes = 0;
    for (const auto& in : t.inputs) {
      EXPECT_LE(numel(in.shape), int64_t{64} << 20) << in.name;
      total_bytes += numel(in.shape) * dtype_size(in.dtype);
    }
    EXPECT_LE(total_bytes, int64_t{512} << 20) << "a worker allocates about 10 input sets";
    auto shapes = infer_shapes(t);
    char row[512];
    std::snprintf(row, sizeof row, "| %s | %s | %s -> %s | %.3f |\n", t.name.c_str(), t.family.c_str(),
                  shape_str(shapes->input).c_str(), shape_str(shapes->output()).c_str(), ms);
    table += row;
  }
  // The README's table is this output (CRUCIBLE_PRINT_CUDA_TABLE=1 prints it).
  if (std::getenv("CRUCIBLE_PRINT_CUDA_TABLE")) std::printf("%s", table.c_str());
}

TEST(CudaSuite, CpuSuiteIsUnchanged) {
  auto cpu = load_task_suite(default_task_dir(), "cpu");
  ASSERT_TRUE(cpu) << cpu.message();
  EXPECT_EQ(cpu->size(), 18u);
  for (const auto& t : *cpu) EXPECT_EQ(t.targets, std::vector<std::string>{"cpu"}) << t.name;
  auto cuda = load_task_suite(default_task_dir(), "cuda");
  ASSERT_TRUE(cuda) << cuda.message();
  auto under_cuda = load_task_suite(cuda_dir(), "cuda");
  ASSERT_TRUE(under_cuda);
  EXPECT_EQ(cuda->size(), under_cuda->size()) << "the CUDA suite is exactly kernels/tasks/cuda";
}

}  // namespace
}  // namespace crucible::kernels
