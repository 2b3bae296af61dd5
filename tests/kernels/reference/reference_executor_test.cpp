#include "kernels/reference/reference_executor.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include <gtest/gtest.h>

namespace crucible::kernels {
namespace {

host_tensor tensor_of(std::vector<int64_t> shape, const std::vector<double>& values) {
  host_tensor t("float32", std::move(shape));
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) t.as<float>()[i] = static_cast<float>(values[i]);
  return t;
}

tensor_spec spec(const std::string& name, std::vector<int64_t> shape) {
  tensor_spec s;
  s.name = name;
  s.shape = std::move(shape);
  return s;
}

op_spec op(const std::string& name, std::vector<std::string> args = {},
           std::map<std::string, double> attrs = {}) {
  return op_spec{name, std::move(args), std::move(attrs)};
}

/// An input by shape and values.
using def = std::pair<std::vector<int64_t>, std::vector<double>>;

/// Runs `ops` on the given inputs (inputs[0] named x, the others a, b, ...) and returns the output.
std::vector<double> run_chain(const std::vector<def>& defs, const std::vector<op_spec>& ops,
                              std::vector<int64_t>* out_shape = nullptr) {
  std::vector<host_tensor> inputs;
  for (const auto& [shape, values] : defs) inputs.push_back(tensor_of(shape, values));
  task_spec t;
  t.name = "tiny";
  for (size_t i = 0; i < inputs.size(); ++i)
    t.inputs.push_back(
        spec(i == 0 ? "x" : std::string(1, static_cast<char>('a' + i - 1)), inputs[i].shape()));
  t.ops = ops;
  auto ref = reference_executor::create(t);
  EXPECT_TRUE(ref) << ref.message();
  if (!ref) return {};
  host_tensor out = ref->make_output();
  ref->run(inputs, out);
  if (out_shape) *out_shape = out.shape();
  return std::vector<double>(out.as<float>(), out.as<float>() + out.numel());
}

const std::vector<double> xs = {-2.5, -1.0, -0.25, 0.0, 0.5, 3.0};

void expect_unary(const op_spec& o, const std::function<double(double)>& f) {
  SCOPED_TRACE(o.op);
  auto got = run_chain({def({2, 3}, xs)}, {o});
  ASSERT_EQ(got.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(got[i], f(xs[i]), 1e-6 * (1 + std::abs(f(xs[i])))) << xs[i];
}

TEST(ReferenceOps, Unary) {
  const double pi = 3.14159265358979323846;
  expect_unary(op("relu"), [](double v) { return v > 0 ? v : 0; });
  expect_unary(op("leaky_relu"), [](double v) { return v > 0 ? v : 0.01 * v; });  // catalog default alpha
  expect_unary(op("leaky_relu", {}, {{"alpha", 0.2}}), [](double v) { return v > 0 ? v : 0.2 * v; });
  expect_unary(op("gelu"), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  expect_unary(op("gelu_tanh"), [&](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
  });
  expect_unary(op("silu"), [](double v) { return v / (1 + std::exp(-v)); });
  expect_unary(op("sigmoid"), [](double v) { return 1 / (1 + std::exp(-v)); });
  expect_unary(op("tanh"), [](double v) { return std::tanh(v); });
  expect_unary(op("exp"), [](double v) { return std::exp(v); });
  expect_unary(op("abs"), [](double v) { return std::abs(v); });
  expect_unary(op("neg"), [](double v) { return -v; });
  expect_unary(op("square"), [](double v) { return v * v; });
  expect_unary(op("softplus"), [](double v) { return std::log1p(std::exp(v)); });
  expect_unary(op("clamp", {}, {{"lo", -1.0}, {"hi", 0.5}}),
               [](double v) { return std::min(std::max(v, -1.0), 0.5); });
  expect_unary(op("mul_scalar", {}, {{"s", -2.0}}), [](double v) { return -2 * v; });
  expect_unary(op("add_scalar", {}, {{"s", 0.75}}), [](double v) { return v + 0.75; });
}

TEST(ReferenceOps, SoftplusIsLinearAboveTwenty) {
  auto got = run_chain({def({1, 3}, {25.0, 20.5, -30.0})}, {op("softplus")});
  EXPECT_EQ(got[0], 25.0);  // threshold 20: exactly v
  EXPECT_EQ(got[1], 20.5);
  EXPECT_NEAR(got[2], std::exp(-30.0), 1e-18);
}

TEST(ReferenceOps, BinaryBroadcastsARowVector) {
  const def x{{2, 3}, xs};
  const std::vector<double> row = {1, 2, 3};
  const std::vector<double> full = {1, 2, 3, 4, 5, 6};
  auto add = run_chain({x, def({3}, row)}, {op("add", {"a"})});
  auto sub = run_chain({x, def({3}, row)}, {op("sub", {"a"})});
  auto mul = run_chain({x, def({2, 3}, full)}, {op("mul", {"a"})});
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(add[i], xs[i] + row[i % 3]);
    EXPECT_FLOAT_EQ(sub[i], xs[i] - row[i % 3]);
    EXPECT_FLOAT_EQ(mul[i], xs[i] * full[i]);
  }
}

TEST(ReferenceOps, RowReductions) {
  std::vector<int64_t> shape;
  auto sum = run_chain({def({2, 3}, xs)}, {op("row_sum")}, &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2}));
  EXPECT_FLOAT_EQ(sum[0], -3.75);
  EXPECT_FLOAT_EQ(sum[1], 3.5);
  auto mean = run_chain({def({2, 3}, xs)}, {op("row_mean")});
  EXPECT_FLOAT_EQ(mean[0], -1.25);
  EXPECT_FLOAT_EQ(mean[1], 3.5 / 3);
  auto max = run_chain({def({2, 3}, xs)}, {op("row_max")});
  EXPECT_FLOAT_EQ(max[0], -0.25);
  EXPECT_FLOAT_EQ(max[1], 3.0);
  // Rank 3 reduces the last dim only.
  auto sum3 = run_chain({def({1, 2, 3}, xs)}, {op("row_sum")}, &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 2}));
  EXPECT_FLOAT_EQ(sum3[1], 3.5);
}

TEST(ReferenceOps, SoftmaxAndLogSoftmax) {
  auto sm = run_chain({def({2, 3}, xs)}, {op("softmax")});
  auto lsm = run_chain({def({2, 3}, xs)}, {op("log_softmax")});
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(xs[3 * r + c]);
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(sm[3 * r + c], std::exp(xs[3 * r + c]) / z, 1e-7);
      EXPECT_NEAR(lsm[3 * r + c], xs[3 * r + c] - std::log(z), 1e-6);
    }
  }
}

TEST(ReferenceOps, LayerNormWithAndWithoutAffine) {
  const std::vector<double> w = {0.5, 1.0, 2.0}, b = {0.1, -0.2, 0.3};
  auto expected = [&](int r, int c, bool use_w, bool use_b) {
    const double* v = &xs[3 * r];
    const double mean = (v[0] + v[1] + v[2]) / 3;
    double var = 0;
    for (int k = 0; k < 3; ++k) var += (v[k] - mean) * (v[k] - mean) / 3;  // biased, as torch
    double y = (v[c] - mean) / std::sqrt(var + 1e-3);
    return y * (use_w ? w[c] : 1.0) + (use_b ? b[c] : 0.0);
  };
  const std::map<std::string, double> eps = {{"eps", 1e-3}};
  auto full = run_chain({def({2, 3}, xs), def({3}, w), def({3}, b)}, {op("layer_norm", {"a", "b"}, eps)});
  auto weight_only = run_chain({def({2, 3}, xs), def({3}, w)}, {op("layer_norm", {"a"}, eps)});
  auto plain = run_chain({def({2, 3}, xs)}, {op("layer_norm", {}, eps)});
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(full[3 * r + c], expected(r, c, true, true), 1e-5);
      EXPECT_NEAR(weight_only[3 * r + c], expected(r, c, true, false), 1e-5);
      EXPECT_NEAR(plain[3 * r + c], expected(r, c, false, false), 1e-5);
    }
}

TEST(ReferenceOps, RmsNorm) {
  const std::vector<double> w = {0.5, 1.0, 2.0};
  auto weighted = run_chain({def({2, 3}, xs), def({3}, w)}, {op("rms_norm", {"a"}, {{"eps", 0.01}})});
  auto plain = run_chain({def({2, 3}, xs)}, {op("rms_norm")});  // default eps 1e-6
  for (int r = 0; r < 2; ++r) {
    const double* v = &xs[3 * r];
    const double ms = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / 3;
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(weighted[3 * r + c], v[c] / std::sqrt(ms + 0.01) * w[c], 1e-6);
      EXPECT_NEAR(plain[3 * r + c], v[c] / std::sqrt(ms + 1e-6), 1e-6);
    }
  }
}

TEST(ReferenceOps, MatmulTakesWAsKByN) {
  const std::vector<double> w = {1, 0, 2, 1, -1, 0.5};  // [3, 2]
  std::vector<int64_t> shape;
  auto y = run_chain({def({2, 3}, xs), def({3, 2}, w)}, {op("matmul", {"a"})}, &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 2}));
  for (int r = 0; r < 2; ++r)
    for (int n = 0; n < 2; ++n) {
      double want = 0;
      for (int k = 0; k < 3; ++k) want += xs[3 * r + k] * w[2 * k + n];
      EXPECT_NEAR(y[2 * r + n], want, 1e-6);
    }
  // A leading batch dim folds into the rows.
  auto y3 = run_chain({def({2, 1, 3}, xs), def({3, 2}, w)}, {op("matmul", {"a"})}, &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 1, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y3[i], y[i]);
}

TEST(ReferenceOps, ChainsApplyInOrder) {
  // row_sum(((x @ W) + b) * 0.5): the GEMM-then-reduce task shape.
  const std::vector<double> w = {1, 0, 2, 1, -1, 0.5}, b = {0.25, -0.5};
  auto y =
      run_chain({def({2, 3}, xs), def({3, 2}, w), def({2}, b)},
                {op("matmul", {"a"}), op("add", {"b"}), op("mul_scalar", {}, {{"s", 0.5}}), op("row_sum")});
  ASSERT_EQ(y.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    double want = 0;
    for (int n = 0; n < 2; ++n) {
      double acc = b[n];
      for (int k = 0; k < 3; ++k) acc += xs[3 * r + k] * w[2 * k + n];
      want += 0.5 * acc;
    }
    EXPECT_NEAR(y[r], want, 1e-6);
  }
}

task_spec input_task() {
  task_spec t;
  t.name = "inputs";
  t.inputs = {spec("x", {64, 128}), spec("W", {128, 32}), spec("p", {64, 128}), spec("u", {64, 128}),
              spec("h", {64, 128})};
  t.inputs[1].dist = "uniform", t.inputs[1].lo = -0.5, t.inputs[1].hi = 0.5, t.inputs[1].param = true;
  t.inputs[2].dist = "positive", t.inputs[2].scale = 2.0;
  t.inputs[3].dist = "uniform", t.inputs[3].lo = 0.25, t.inputs[3].hi = 0.75;
  t.inputs[4].dist = "heavy_tailed";
  t.ops = {op("mul", {"p"}), op("add", {"u"}), op("sub", {"h"}), op("matmul", {"W"})};
  return t;
}

TEST(ReferenceInputs, DeterministicAtFreshAddresses) {
  auto ref = reference_executor::create(input_task());
  ASSERT_TRUE(ref) << ref.message();
  auto a = ref->make_inputs(7), b = ref->make_inputs(7), c = ref->make_inputs(8);
  ASSERT_EQ(a.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].shape(), ref->task().inputs[i].shape);
    EXPECT_EQ(a[i].bytes(), b[i].bytes());
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].bytes()), 0) << i;
    EXPECT_NE(a[i].data(), b[i].data());
    EXPECT_NE(std::memcmp(a[i].data(), c[i].data(), a[i].bytes()), 0) << i;
  }
  // Inputs of one set are drawn independently of each other.
  EXPECT_NE(std::memcmp(a[0].data(), a[2].data(), 64), 0);
}

TEST(ReferenceInputs, GoldenValuesPinTheGenerator) {
  // Inputs must be the same on every machine and LibTorch version: these pin the seeding and the samplers
  // (a change here means recorded runs no longer replay on the same inputs).
  auto ref = reference_executor::create(input_task());
  ASSERT_TRUE(ref) << ref.message();
  auto in = ref->make_inputs(0);
  auto heavy = ref->make_inputs(0, input_variant::heavy_tailed);
  EXPECT_FLOAT_EQ(in[0].as<float>()[0], -0.547979593f);
  EXPECT_FLOAT_EQ(in[1].as<float>()[0], 0.0785091817f);
  EXPECT_FLOAT_EQ(in[2].as<float>()[0], 3.29792786f);
  EXPECT_FLOAT_EQ(in[3].as<float>()[0], 0.510827601f);
  EXPECT_FLOAT_EQ(in[4].as<float>()[0], 1.17441773f);
  EXPECT_FLOAT_EQ(heavy[0].as<float>()[0], 0.746536016f);
}

TEST(ReferenceInputs, DistributionsAndVariants) {
  auto ref = reference_executor::create(input_task());
  ASSERT_TRUE(ref) << ref.message();
  auto nominal = ref->make_inputs(3, input_variant::nominal);
  auto heavy = ref->make_inputs(3, input_variant::heavy_tailed);
  auto stats = [](const host_tensor& t) {
    double sum = 0, sq = 0, lo = 1e300, hi = -1e300;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.as<float>()[i];
      sum += v, sq += v * v, lo = std::min(lo, v), hi = std::max(hi, v);
    }
    const double mean = sum / t.numel();
    return std::array<double, 4>{mean, std::sqrt(sq / t.numel() - mean * mean), lo, hi};
  };
  auto x = stats(nominal[0]);
  EXPECT_NEAR(x[0], 0.0, 0.05);
  EXPECT_NEAR(x[1], 1.0, 0.05);
  auto w = stats(nominal[1]);
  EXPECT_GE(w[2], -0.5);
  EXPECT_LT(w[3], 0.5);
  EXPECT_NEAR(w[1], 1 / std::sqrt(12.0), 0.02);
  auto p = stats(nominal[2]);
  EXPECT_GE(p[2], 0.1 - 1e-6);  // 2 * (|z| + 0.05)
  auto u = stats(nominal[3]);
  EXPECT_GE(u[2], 0.25);
  EXPECT_LT(u[3], 0.75);
  auto h = stats(nominal[4]);
  EXPECT_LE(std::max(-h[2], h[3]), 1e3);

  // Heavy-tailed: activations change, parameters keep their values; sign domains are kept.
  EXPECT_EQ(std::memcmp(nominal[1].data(), heavy[1].data(), nominal[1].bytes()), 0);
  EXPECT_NE(std::memcmp(nominal[0].data(), heavy[0].data(), nominal[0].bytes()), 0);
  auto hx = stats(heavy[0]);
  EXPECT_GT(std::max(-hx[2], hx[3]), 20.0);  // a tail a normal never reaches in 8192 draws
  EXPECT_LE(std::max(-hx[2], hx[3]), 1e3);
  EXPECT_GE(stats(heavy[2])[2], 0.1 - 1e-6);
  EXPECT_GE(stats(heavy[3])[2], 0.25);
}

TEST(ReferenceExecutor, RunTimedMeasuresWithoutWriting) {
  auto ref = reference_executor::create(input_task());
  ASSERT_TRUE(ref) << ref.message();
  EXPECT_EQ(ref->output_shape(), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(ref->output_dtype(), "float32");
  auto in = ref->make_inputs(1);
  std::vector<host_tensor> before;
  for (const auto& t : in) before.push_back(t.clone());
  const double ms = ref->run_timed(in);
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 1e4);
  host_tensor out = ref->make_output(), again = ref->make_output();
  ref->run(in, out);
  ref->run(in, again);
  EXPECT_EQ(std::memcmp(out.data(), again.data(), out.bytes()), 0);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(std::memcmp(in[i].data(), before[i].data(), in[i].bytes()), 0);
}

TEST(ReferenceExecutor, RejectsBadTasksAndBadCalls) {
  task_spec t = input_task();
  t.ops.push_back(op("frobnicate"));
  auto bad = reference_executor::create(t);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("frobnicate"), std::string::npos);
  t = input_task();
  for (auto& in : t.inputs) in.dtype = "int32";
  auto ints = reference_executor::create(t);
  ASSERT_FALSE(ints);
  EXPECT_NE(ints.message().find("floating"), std::string::npos);

  auto ref = reference_executor::create(input_task());
  ASSERT_TRUE(ref);
  auto in = ref->make_inputs(0);
  host_tensor out = ref->make_output();
  in.pop_back();
  EXPECT_THROW(ref->run(in, out), std::invalid_argument);
  host_tensor wrong("float32", {32, 64});
  EXPECT_THROW(ref->run(ref->make_inputs(0), wrong), std::invalid_argument);
}

TEST(ReferenceExecutor, Float64TasksRun) {
  task_spec t;
  t.name = "f64";
  t.inputs = {spec("x", {4, 5})};
  t.inputs[0].dtype = "float64";
  t.ops = {op("softmax"), op("row_sum")};
  auto ref = reference_executor::create(t);
  ASSERT_TRUE(ref) << ref.message();
  auto in = ref->make_inputs(0);
  host_tensor out = ref->make_output();
  ref->run(in, out);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out.as<double>()[i], 1.0, 1e-12);
}

}  // namespace
}  // namespace crucible::kernels
