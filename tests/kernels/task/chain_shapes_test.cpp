#include "kernels/task/chain_shapes.hpp"

#include <gtest/gtest.h>

#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {
namespace {

// A task whose chain starts at `x` of shape `x_shape` and runs one op with side inputs `sides`.
task_spec one_op(const shape_t& x_shape, const std::string& op, std::vector<tensor_spec> sides = {},
                 std::map<std::string, double> attrs = {}) {
  task_spec t;
  t.name = "t";
  t.inputs.push_back({"x", x_shape});
  op_spec o{op, {}, std::move(attrs)};
  for (auto& s : sides) {
    o.args.push_back(s.name);
    t.inputs.push_back(std::move(s));
  }
  t.ops.push_back(std::move(o));
  return t;
}

tensor_spec in(const std::string& name, shape_t shape) {
  return {name, std::move(shape)};
}

shape_t out_shape(const task_spec& t) {
  auto s = infer_shapes(t);
  EXPECT_TRUE(s) << s.message();
  return s ? s->output() : shape_t{-1};
}

void expect_error(const task_spec& t, std::initializer_list<std::string> parts) {
  auto s = infer_shapes(t);
  ASSERT_FALSE(s) << "accepted: output " << shape_str(s->output());
  for (const auto& p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
}

TEST(OpCatalog, OriginalOrderIsKeptAndNewOpsAreAppended) {
  const auto& ops = op_catalog();
  ASSERT_EQ(ops.size(), 26u + 30u);
  EXPECT_EQ(ops[0].name, "relu");
  EXPECT_EQ(ops[25].name, "matmul");
  EXPECT_EQ(ops[26].name, "elu");
  EXPECT_EQ(ops.back().name, "attention");
  for (const char* name : {"elu",
                           "selu",
                           "hardswish",
                           "hardsigmoid",
                           "softsign",
                           "mish",
                           "reduce_sum",
                           "reduce_mean",
                           "reduce_max",
                           "reduce_min",
                           "cumsum",
                           "conv2d",
                           "conv3d",
                           "conv_transpose2d",
                           "conv_transpose3d",
                           "max_pool2d",
                           "avg_pool2d",
                           "max_pool3d",
                           "avg_pool3d",
                           "global_avg_pool",
                           "batch_norm",
                           "instance_norm",
                           "group_norm",
                           "mse_loss",
                           "huber_loss",
                           "cross_entropy",
                           "kl_div",
                           "cosine_loss",
                           "bmm",
                           "attention"})
    EXPECT_NE(find_op(name), nullptr) << name;
  EXPECT_STREQ(to_string(find_op("conv2d")->cls), "conv");
  EXPECT_STREQ(to_string(find_op("group_norm")->cls), "channel_norm");
  EXPECT_STREQ(to_string(find_op("kl_div")->cls), "loss");
  EXPECT_STREQ(to_string(find_op("cumsum")->cls), "scan");
  EXPECT_STREQ(to_string(find_op("reduce_min")->cls), "dim_reduce");
  EXPECT_STREQ(to_string(find_op("global_avg_pool")->cls), "pool");
  EXPECT_STREQ(to_string(find_op("bmm")->cls), "bmm");
  EXPECT_STREQ(to_string(find_op("attention")->cls), "attention");
  EXPECT_EQ(op_attr(op_spec{"elu"}, "alpha"), 1.0);
  EXPECT_EQ(op_attr(op_spec{"huber_loss"}, "delta"), 1.0);
}

TEST(ChainShapes, ZeroDimShape) {
  EXPECT_EQ(numel(shape_t{}), 1);
  EXPECT_EQ(shape_str(shape_t{}), "[]");
}

TEST(ChainShapes, BinaryBroadcastsByNumpyRules) {
  EXPECT_EQ(out_shape(one_op({2, 3, 4, 5}, "add", {in("b", {3, 1, 1})})), (shape_t{2, 3, 4, 5}));
  EXPECT_EQ(out_shape(one_op({2, 3, 4, 5}, "mul", {in("b", {5})})), (shape_t{2, 3, 4, 5}));
  EXPECT_EQ(out_shape(one_op({2, 3, 4, 5}, "sub", {in("b", {1, 3, 4, 1})})), (shape_t{2, 3, 4, 5}));
  EXPECT_EQ(out_shape(one_op({2, 3}, "add", {in("b", {2, 3})})), (shape_t{2, 3}));
  // The running shape never changes: a side input may not grow it.
  expect_error(one_op({3, 1}, "add", {in("b", {3, 4})}), {"ops[0] (add)", "'b'", "[3, 4]", "broadcasts"});
  expect_error(one_op({3, 4}, "add", {in("b", {2, 3, 4})}), {"ops[0] (add)", "[2, 3, 4]"});
  expect_error(one_op({3, 4}, "add", {in("b", {3})}), {"ops[0] (add)", "running shape [3, 4]"});
}

TEST(ChainShapes, DimReduceAcceptsNegativeDims) {
  EXPECT_EQ(out_shape(one_op({2, 3, 4}, "reduce_sum", {}, {{"dim", 1}})), (shape_t{2, 4}));
  EXPECT_EQ(out_shape(one_op({2, 3, 4}, "reduce_max", {}, {{"dim", -1}})), (shape_t{2, 3}));
  EXPECT_EQ(out_shape(one_op({2, 3, 4}, "reduce_min", {}, {{"dim", -3}})), (shape_t{3, 4}));
  EXPECT_EQ(out_shape(one_op({2, 3, 4}, "reduce_mean", {}, {{"dim", 0}})), (shape_t{3, 4}));
  expect_error(one_op({2, 3, 4}, "reduce_sum", {}, {{"dim", 3}}),
               {"ops[0] (reduce_sum)", "attrs.dim", "[-3, 2]"});
  expect_error(one_op({2, 3, 4}, "reduce_sum", {}, {{"dim", 0.5}}), {"attrs.dim", "integer"});
  expect_error(one_op({2, 3, 4}, "reduce_sum"), {"ops[0] (reduce_sum)", "attrs.dim is required"});
  expect_error(one_op({7}, "reduce_sum", {}, {{"dim", 0}}), {"rank >= 2"});
}

TEST(ChainShapes, Scan) {
  EXPECT_EQ(out_shape(one_op({4, 9}, "cumsum", {}, {{"reverse", 1}, {"exclusive", 1}})), (shape_t{4, 9}));
  expect_error(one_op({4, 9}, "cumsum", {}, {{"reverse", 2}}), {"ops[0] (cumsum)", "attrs.reverse"});
}

TEST(ChainShapes, ConvolutionsAsTorch) {
  // conv2d: (H + 2p - d(k-1) - 1) / s + 1
  EXPECT_EQ(out_shape(one_op({2, 3, 32, 30}, "conv2d", {in("W", {8, 3, 3, 5})})), (shape_t{2, 8, 30, 26}));
  EXPECT_EQ(out_shape(one_op({2, 3, 32, 32}, "conv2d", {in("W", {8, 3, 3, 3}), in("b", {8})},
                             {{"stride", 2}, {"padding", 1}})),
            (shape_t{2, 8, 16, 16}));
  EXPECT_EQ(
      out_shape(one_op({1, 4, 10, 10}, "conv2d", {in("W", {6, 2, 3, 3})}, {{"groups", 2}, {"dilation", 2}})),
      (shape_t{1, 6, 6, 6}));
  EXPECT_EQ(out_shape(one_op({2, 3, 8, 9, 10}, "conv3d", {in("W", {4, 3, 3, 3, 3})})),
            (shape_t{2, 4, 6, 7, 8}));
  // conv_transpose: (H - 1) s - 2p + (k - 1) + output_padding + 1
  EXPECT_EQ(out_shape(one_op({2, 3, 8, 8}, "conv_transpose2d", {in("W", {3, 5, 3, 3}), in("b", {5})})),
            (shape_t{2, 5, 10, 10}));
  EXPECT_EQ(out_shape(one_op({2, 3, 8, 8}, "conv_transpose2d", {in("W", {3, 5, 4, 4})},
                             {{"stride", 2}, {"padding", 1}, {"output_padding", 1}})),
            (shape_t{2, 5, 17, 17}));
  EXPECT_EQ(out_shape(one_op({1, 3, 4, 5, 6}, "conv_transpose3d", {in("W", {3, 2, 3, 3, 3})})),
            (shape_t{1, 2, 6, 7, 8}));
  expect_error(one_op({2, 3, 32, 32}, "conv2d", {in("W", {8, 4, 3, 3})}),
               {"ops[0] (conv2d)", "weight 'W'", "[O, 3, k..]", "[8, 4, 3, 3]"});
  expect_error(one_op({2, 3, 32, 32}, "conv2d", {in("W", {8, 3, 3, 3}), in("b", {7})}),
               {"bias 'b'", "[8]", "[7]"});
  expect_error(one_op({2, 3, 32}, "conv2d", {in("W", {8, 3, 3, 3})}), {"rank 4", "[N, C, H, W]"});
  expect_error(one_op({2, 3, 2, 2}, "conv2d", {in("W", {8, 3, 3, 3})}), {"does not fit"});
  expect_error(one_op({2, 3, 8, 8}, "conv_transpose2d", {in("W", {4, 5, 3, 3})}), {"[3, O, k..]"});
  expect_error(one_op({2, 3, 8, 8}, "conv_transpose2d", {in("W", {3, 5, 3, 3})}, {{"output_padding", 1}}),
               {"attrs.output_padding"});
  expect_error(one_op({2, 3, 8, 8}, "conv2d", {in("W", {8, 3, 3, 3})}, {{"groups", 2}}),
               {"groups 2", "divide"});
}

TEST(ChainShapes, PoolingAsTorch) {
  EXPECT_EQ(out_shape(one_op({2, 3, 33, 32}, "max_pool2d", {}, {{"kernel", 2}})), (shape_t{2, 3, 16, 16}));
  EXPECT_EQ(
      out_shape(one_op({2, 3, 32, 32}, "avg_pool2d", {}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}})),
      (shape_t{2, 3, 16, 16}));
  EXPECT_EQ(out_shape(one_op({2, 3, 8, 9, 10}, "max_pool3d", {}, {{"kernel", 3}, {"stride", 1}})),
            (shape_t{2, 3, 6, 7, 8}));
  EXPECT_EQ(out_shape(one_op({2, 3, 8, 8, 8}, "avg_pool3d", {}, {{"kernel", 2}})), (shape_t{2, 3, 4, 4, 4}));
  EXPECT_EQ(out_shape(one_op({2, 3, 8, 8, 8}, "global_avg_pool")), (shape_t{2, 3}));
  EXPECT_EQ(out_shape(one_op({2, 3, 8}, "global_avg_pool")), (shape_t{2, 3}));
  expect_error(one_op({2, 3, 8, 8}, "max_pool2d"), {"ops[0] (max_pool2d)", "attrs.kernel is required"});
  expect_error(one_op({2, 3, 8, 8}, "max_pool2d", {}, {{"kernel", 2}, {"padding", 2}}),
               {"attrs.padding", "[0, 1]"});
  expect_error(one_op({2, 3, 8, 8}, "max_pool3d", {}, {{"kernel", 2}}), {"rank 5"});
  expect_error(one_op({2, 3}, "global_avg_pool"), {"rank >= 3"});
}

TEST(ChainShapes, ChannelNorms) {
  const shape_t x{4, 6, 5, 5};
  EXPECT_EQ(out_shape(one_op(x, "batch_norm", {in("w", {6}), in("b", {6})})), x);
  EXPECT_EQ(out_shape(one_op(x, "instance_norm")), x);
  EXPECT_EQ(out_shape(one_op(x, "group_norm", {in("w", {6}), in("b", {6})}, {{"groups", 3}})), x);
  expect_error(one_op(x, "batch_norm", {in("w", {5}), in("b", {6})}), {"ops[0] (batch_norm)", "'w'", "[6]"});
  expect_error(one_op(x, "group_norm", {in("w", {6}), in("b", {6})}, {{"groups", 4}}),
               {"groups 4", "divide"});
  expect_error(one_op(x, "instance_norm", {in("w", {6})}), {"got one"});
  expect_error(one_op({4, 6}, "instance_norm"), {"rank >= 3"});
  expect_error(one_op({1, 6}, "batch_norm", {in("w", {6}), in("b", {6})}), {"more than one value"});
}

TEST(ChainShapes, LossesEndInAScalar) {
  for (const char* loss : {"mse_loss", "huber_loss", "cross_entropy", "kl_div", "cosine_loss"}) {
    SCOPED_TRACE(loss);
    const auto t = one_op({8, 16}, loss, {in("t", {8, 16})});
    EXPECT_EQ(out_shape(t), shape_t{});
    expect_error(one_op({8, 16}, loss, {in("t", {16})}),
                 {std::string("(") + loss + ")", "target 't'", "[8, 16]"});
  }
  // Elementwise ops still apply to the scalar; row ops do not.
  auto t = one_op({8, 16}, "mse_loss", {in("t", {8, 16})});
  t.ops.push_back({"sigmoid"});
  EXPECT_EQ(out_shape(t), shape_t{});
  auto twice = t;
  twice.ops.push_back({"mse_loss", {"t"}});
  expect_error(twice, {"ops[2] (mse_loss)", "rank >= 1, got a scalar"});
  t.ops.push_back({"row_sum"});
  expect_error(t, {"ops[2] (row_sum)", "rank >= 2"});
}

TEST(ChainShapes, BmmAndAttention) {
  EXPECT_EQ(out_shape(one_op({4, 8, 16}, "bmm", {in("W", {4, 16, 5})})), (shape_t{4, 8, 5}));
  expect_error(one_op({4, 8, 16}, "bmm", {in("W", {4, 15, 5})}), {"ops[0] (bmm)", "[4, 16, N]"});
  expect_error(one_op({8, 16}, "bmm", {in("W", {16, 5})}), {"[B, M, K]"});
  EXPECT_EQ(out_shape(one_op({2, 4, 8, 16}, "attention", {in("k", {2, 4, 12, 16}), in("v", {2, 4, 12, 16})})),
            (shape_t{2, 4, 8, 16}));
  EXPECT_EQ(out_shape(one_op({2, 4, 8, 16}, "attention", {in("k", {2, 4, 8, 16}), in("v", {2, 4, 8, 16})},
                             {{"causal", 1}})),
            (shape_t{2, 4, 8, 16}));
  expect_error(one_op({2, 4, 8, 16}, "attention", {in("k", {2, 4, 12, 16}), in("v", {2, 4, 12, 8})}),
               {"ops[0] (attention)", "'v'", "[2, 4, Skv, 16]"});
  expect_error(
      one_op({2, 4, 8, 16}, "attention", {in("k", {2, 4, 12, 16}), in("v", {2, 4, 12, 16})}, {{"causal", 1}}),
      {"causal", "Skv == S"});
  expect_error(one_op({8, 16}, "attention", {in("k", {8, 16}), in("v", {8, 16})}), {"[B, H, S, D]"});
}

TEST(ChainShapes, RowOpsAcceptAnyRankFromTwo) {
  EXPECT_EQ(out_shape(one_op({2, 3, 4, 5}, "softmax")), (shape_t{2, 3, 4, 5}));
  EXPECT_EQ(out_shape(one_op({2, 3, 4, 5}, "row_sum")), (shape_t{2, 3, 4}));
}

}  // namespace
}  // namespace crucible::kernels
