// The least bytes a KernelBench module must move, read from its traced forward pass: counted where every
// element must be read or written, nothing where a selection, a view or an unknown op leaves a doubt.
#include <gtest/gtest.h>

#include "kernels/python/kernelbench_reference.hpp"

namespace crucible::kernels {
namespace {

// A problem file around `forward` (a body using x and y, each a float32 [64, 256] input), with `init` in
// __init__ (self.conv, say).
task_cost cost_of(const std::string& forward, const std::string& init = "pass",
                  const std::string& inputs = "torch.randn(64, 256), torch.randn(64, 256)") {
  const std::string source =
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
      "class Model(nn.Module):\n"
      "    def __init__(self):\n        super().__init__()\n        " +
      init + "\n\n    def forward(self, x, y):\n        " + forward + "\n\ndef get_inputs():\n    return [" +
      inputs + "]\n\ndef get_init_inputs():\n    return []\n";
  auto task = kernelbench_task_from_source("cost_case.py", source, "cost_case");
  EXPECT_TRUE(task) << task.message() << "\n" << source;
  if (!task) return {};
  auto ref = kernelbench_reference::create(*task);
  EXPECT_TRUE(ref) << ref.message();
  return ref ? (*ref)->minimum_cost() : task_cost{};
}

constexpr double mat = 64 * 256 * 4;  // one [64, 256] float32 tensor's bytes

TEST(KernelBenchCost, ElementwiseReductionsAndProductsReadTheirInputsWhole) {
  auto c = cost_of("return torch.relu(x) * 2 + y");
  EXPECT_DOUBLE_EQ(c.bytes, 3 * mat) << c.basis;
  EXPECT_EQ(c.flops, 0.0) << "no products counted: a rewrite may change them";
  EXPECT_NE(c.basis.find("reads 2 of 2 inputs whole"), std::string::npos) << c.basis;
  EXPECT_NE(c.basis.find("writes its output"), std::string::npos) << c.basis;
  EXPECT_DOUBLE_EQ(cost_of("return torch.softmax(x, dim=1).sum(dim=0) + y.amax()").bytes, 2 * mat + 256 * 4);
  EXPECT_DOUBLE_EQ(cost_of("return x @ y.t()").bytes, 2 * mat + 64 * 64 * 4);
  EXPECT_DOUBLE_EQ(cost_of("return torch.cat([x, y], dim=1)").bytes, 4 * mat);
  // Only the condition of a selection is read whole; the values it picks from, where it picks them.
  EXPECT_DOUBLE_EQ(cost_of("return torch.where(x > 0, x, y)").bytes, 2 * mat);
}

TEST(KernelBenchCost, WhatASelectionLeavesUnreadIsNotCounted) {
  auto c = cost_of("return x[:, :8].sum() + y[0]");
  EXPECT_DOUBLE_EQ(c.bytes, 256 * 4) << c.basis;  // the output only
  EXPECT_NE(c.basis.find("reads 0 of 2 inputs whole"), std::string::npos) << c.basis;
  EXPECT_DOUBLE_EQ(cost_of("return torch.triu(x @ y.t())").bytes, 64 * 64 * 4);
  EXPECT_DOUBLE_EQ(cost_of("return torch.diag(x[0]) + y[:, :64].sum()").bytes, 256 * 256 * 4);
}

// Windows read their input whole when no stride steps over a gap between them.
TEST(KernelBenchCost, ConvolutionsAndPoolsCountTheirInputOnlyWithoutGaps) {
  const std::string image = "torch.randn(2, 4, 16, 16), torch.randn(1)";
  constexpr double in = 2 * 4 * 16 * 16 * 4;
  EXPECT_DOUBLE_EQ(cost_of("return self.conv(x)", "self.conv = nn.Conv2d(4, 8, 3)", image).bytes,
                   in + 2 * 8 * 14 * 14 * 4);
  EXPECT_DOUBLE_EQ(cost_of("return self.conv(x)", "self.conv = nn.Conv2d(4, 8, 1, stride=2)", image).bytes,
                   2 * 8 * 8 * 8 * 4);
  EXPECT_DOUBLE_EQ(cost_of("return F.max_pool2d(x, 2)", "pass", image).bytes, in + 2 * 4 * 8 * 8 * 4);
  EXPECT_DOUBLE_EQ(cost_of("return F.max_pool2d(x, 2, 3)", "pass", image).bytes, 2 * 4 * 5 * 5 * 4);
  EXPECT_DOUBLE_EQ(
      cost_of("return self.conv(x)", "self.conv = nn.Conv2d(4, 4, 2, stride=2, dilation=2)", image).bytes,
      2 * 4 * 7 * 7 * 4);
}

// No floor at all where the output costs nothing to make or a write muddles what was read.
TEST(KernelBenchCost, AViewOfAnInputOrAWriteIntoAViewLeavesNoFloor) {
  auto view = cost_of("return x.view(-1)");
  EXPECT_EQ(view.bytes, 0.0);
  EXPECT_NE(view.basis.find("no floor: the output is an input or a view of one"), std::string::npos)
      << view.basis;
  auto written = cost_of("z = x.clone()\n        z[:, 0] = 0\n        return z + y");
  EXPECT_EQ(written.bytes, 0.0);
  EXPECT_NE(written.basis.find("writes into a view"), std::string::npos) << written.basis;
  // A broadcast's output may be a view of something smaller: its write is not counted, its input's read is.
  auto broadcast = cost_of("return x.sum(dim=1, keepdim=True).expand(64, 256).contiguous() + 0 * y[0, 0]");
  EXPECT_DOUBLE_EQ(broadcast.bytes, mat) << broadcast.basis;
  EXPECT_NE(broadcast.basis.find("a broadcast"), std::string::npos) << broadcast.basis;
}

}  // namespace
}  // namespace crucible::kernels
