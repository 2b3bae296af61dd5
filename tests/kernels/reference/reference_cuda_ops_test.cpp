// The ops added for the CUDA target, checked against plain loops written here (never the same ATen call),
// and the view-based entry points (fill_inputs, run_views) on the host.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "kernels/reference/reference_executor.hpp"
#include "kernels/task/chain_shapes.hpp"

namespace crucible::kernels {
namespace {

// A small dense tensor of doubles in row-major order.
struct ten {
  shape_t shape;
  std::vector<double> v;
  double& at(std::initializer_list<int64_t> idx) { return v[offset(idx)]; }
  double at(std::initializer_list<int64_t> idx) const { return v[offset(idx)]; }
  size_t offset(std::initializer_list<int64_t> idx) const {
    size_t o = 0, d = 0;
    for (auto i : idx) o = o * shape[d++] + i;
    return o;
  }
};

// Deterministic values in about [-2, 2] (or (0.1, 2.1] when positive).
ten values(shape_t shape, uint32_t salt, bool positive = false) {
  ten t{shape, std::vector<double>(numel(shape))};
  uint32_t x = 12345u + salt * 7919u;
  for (auto& e : t.v) {
    x = x * 1664525u + 1013904223u;
    const double u = (x >> 8) / 16777216.0;
    e = positive ? 0.1 + 2.0 * u : 4.0 * u - 2.0;
  }
  return t;
}

ten zeros(shape_t shape) {
  return ten{shape, std::vector<double>(numel(shape), 0.0)};
}

// Runs one task (inputs named x, a, b, c in order) on the given values; returns the output values.
ten run(const std::vector<ten>& ins, const std::vector<op_spec>& ops) {
  task_spec t;
  t.name = "tiny";
  std::vector<host_tensor> inputs;
  for (size_t i = 0; i < ins.size(); ++i) {
    tensor_spec s;
    s.name = i == 0 ? "x" : std::string(1, static_cast<char>('a' + i - 1));
    s.shape = ins[i].shape;
    t.inputs.push_back(s);
    host_tensor h("float32", ins[i].shape);
    for (size_t k = 0; k < ins[i].v.size(); ++k) h.as<float>()[k] = static_cast<float>(ins[i].v[k]);
    inputs.push_back(std::move(h));
  }
  t.ops = ops;
  auto ref = reference_executor::create(t);
  EXPECT_TRUE(ref) << ref.message();
  if (!ref) return {};
  host_tensor out = ref->make_output();
  ref->run(inputs, out);
  return ten{out.shape(), std::vector<double>(out.as<float>(), out.as<float>() + out.numel())};
}

// Values as float32 (what the reference sees), so a loop reproduces its inputs exactly.
ten f32(ten t) {
  for (auto& e : t.v) e = static_cast<float>(e);
  return t;
}

void expect_close(const ten& got, const ten& want, double tol = 2e-5) {
  ASSERT_EQ(got.shape, want.shape);
  for (size_t i = 0; i < want.v.size(); ++i)
    EXPECT_NEAR(got.v[i], want.v[i], tol * (1 + std::abs(want.v[i]))) << "element " << i;
}

op_spec op(const std::string& name, std::vector<std::string> args = {},
           std::map<std::string, double> attrs = {}) {
  return op_spec{name, std::move(args), std::move(attrs)};
}

TEST(ReferenceCudaOps, NewUnaryOps) {
  const ten x = f32(values({4, 6}, 1));
  auto check = [&](const op_spec& o, const std::function<double(double)>& f) {
    SCOPED_TRACE(o.op);
    ten want = x;
    for (auto& e : want.v) e = f(e);
    expect_close(run({x}, {o}), want);
  };
  const double selu_alpha = 1.6732632423543772848170429916717, selu_scale = 1.0507009873554804934193349852946;
  check(op("elu"), [](double v) { return v > 0 ? v : std::exp(v) - 1; });
  check(op("elu", {}, {{"alpha", 0.5}}), [](double v) { return v > 0 ? v : 0.5 * (std::exp(v) - 1); });
  check(op("selu"), [&](double v) { return selu_scale * (v > 0 ? v : selu_alpha * (std::exp(v) - 1)); });
  check(op("hardswish"), [](double v) { return v * std::clamp(v + 3, 0.0, 6.0) / 6; });
  check(op("hardsigmoid"), [](double v) { return std::clamp(v / 6 + 0.5, 0.0, 1.0); });
  check(op("softsign"), [](double v) { return v / (1 + std::abs(v)); });
  check(op("mish"), [](double v) { return v * std::tanh(std::log1p(std::exp(v))); });
}

TEST(ReferenceCudaOps, BinaryBroadcastsAChannelVector) {
  const ten x = f32(values({2, 3, 2, 2}, 2)), b = f32(values({3, 1, 1}, 3));
  ten want = x;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t w = 0; w < 2; ++w) want.at({n, c, h, w}) *= b.v[c];
  expect_close(run({x, b}, {op("mul", {"a"})}), want);
}

TEST(ReferenceCudaOps, DimReductions) {
  const ten x = f32(values({2, 3, 4}, 4));
  for (int dim : {1, -2, 0, 2}) {
    const int d = dim < 0 ? dim + 3 : dim;
    shape_t s = x.shape;
    s.erase(s.begin() + d);
    ten sum = zeros(s), mean = zeros(s), mx = zeros(s), mn = zeros(s);
    for (int64_t i = 0; i < numel(s); ++i) {
      // The output index i expands to input indices along d.
      const int64_t inner = d == 2 ? 1 : (d == 1 ? 4 : 12), len = x.shape[d];
      const int64_t outer_i = i / inner, inner_i = i % inner;
      double acc = 0, hi = -1e300, lo = 1e300;
      for (int64_t k = 0; k < len; ++k) {
        const double e = x.v[(outer_i * len + k) * inner + inner_i];
        acc += e, hi = std::max(hi, e), lo = std::min(lo, e);
      }
      sum.v[i] = acc, mean.v[i] = acc / len, mx.v[i] = hi, mn.v[i] = lo;
    }
    SCOPED_TRACE(dim);
    expect_close(run({x}, {op("reduce_sum", {}, {{"dim", dim}})}), sum);
    expect_close(run({x}, {op("reduce_mean", {}, {{"dim", dim}})}), mean);
    expect_close(run({x}, {op("reduce_max", {}, {{"dim", dim}})}), mx);
    expect_close(run({x}, {op("reduce_min", {}, {{"dim", dim}})}), mn);
  }
}

TEST(ReferenceCudaOps, CumsumFlags) {
  const ten x = f32(values({3, 5}, 5));
  for (int reverse : {0, 1})
    for (int exclusive : {0, 1}) {
      ten want = x;
      for (int64_t r = 0; r < 3; ++r) {
        double acc = 0;
        for (int64_t k = 0; k < 5; ++k) {
          const int64_t j = reverse ? 4 - k : k;
          const double e = x.at({r, j});
          want.at({r, j}) = exclusive ? acc : acc + e;
          acc += e;
        }
      }
      SCOPED_TRACE(std::to_string(reverse) + std::to_string(exclusive));
      expect_close(run({x}, {op("cumsum", {}, {{"reverse", reverse}, {"exclusive", exclusive}})}), want);
    }
}

// Direct convolution over [N, C, H, W] (depth 1 for 2d: the loops treat 2d as 3d with D = k = 1).
ten conv_loops(const ten& x, const ten& w, const ten* b, int64_t stride, int64_t pad, int64_t dil,
               int64_t groups, bool three_d) {
  const int64_t N = x.shape[0], C = x.shape[1], O = w.shape[0], Cg = C / groups, Og = O / groups;
  const int64_t D = three_d ? x.shape[2] : 1, H = x.shape[three_d ? 3 : 2], W = x.shape[three_d ? 4 : 3];
  const int64_t kd = three_d ? w.shape[2] : 1, kh = w.shape[three_d ? 3 : 2], kw = w.shape[three_d ? 4 : 3];
  const int64_t pd = three_d ? pad : 0;
  auto out_dim = [&](int64_t in, int64_t k, int64_t p) {
    return (in + 2 * p - dil * (k - 1) - 1) / stride + 1;
  };
  const int64_t Do = three_d ? out_dim(D, kd, pd) : 1, Ho = out_dim(H, kh, pad), Wo = out_dim(W, kw, pad);
  shape_t s = three_d ? shape_t{N, O, Do, Ho, Wo} : shape_t{N, O, Ho, Wo};
  ten y = zeros(s);
  int64_t i = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t z = 0; z < Do; ++z)
        for (int64_t r = 0; r < Ho; ++r)
          for (int64_t c = 0; c < Wo; ++c, ++i) {
            double acc = b ? b->v[o] : 0.0;
            const int64_t g = o / Og;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t a = 0; a < kd; ++a)
                for (int64_t p = 0; p < kh; ++p)
                  for (int64_t q = 0; q < kw; ++q) {
                    const int64_t zz = z * stride - pd + a * dil, rr = r * stride - pad + p * dil,
                                  cc = c * stride - pad + q * dil;
                    if (zz < 0 || zz >= D || rr < 0 || rr >= H || cc < 0 || cc >= W) continue;
                    const int64_t chan = g * Cg + ci;
                    const double xv = x.v[(((n * C + chan) * D + zz) * H + rr) * W + cc];
                    const double wv = w.v[(((o * Cg + ci) * kd + a) * kh + p) * kw + q];
                    acc += xv * wv;
                  }
            y.v[i] = acc;
          }
  return y;
}

// Transposed convolution by scattering each input element (the definition).
ten conv_transpose_loops(const ten& x, const ten& w, const ten* b, int64_t stride, int64_t pad,
                         int64_t out_pad, bool three_d) {
  const int64_t N = x.shape[0], C = x.shape[1], O = w.shape[1];
  const int64_t D = three_d ? x.shape[2] : 1, H = x.shape[three_d ? 3 : 2], W = x.shape[three_d ? 4 : 3];
  const int64_t kd = three_d ? w.shape[2] : 1, kh = w.shape[three_d ? 3 : 2], kw = w.shape[three_d ? 4 : 3];
  const int64_t pd = three_d ? pad : 0, opd = three_d ? out_pad : 0;
  auto out_dim = [&](int64_t in, int64_t k, int64_t p, int64_t op) {
    return (in - 1) * stride - 2 * p + k + op;
  };
  const int64_t Do = three_d ? out_dim(D, kd, pd, opd) : 1, Ho = out_dim(H, kh, pad, out_pad),
                Wo = out_dim(W, kw, pad, out_pad);
  ten y = zeros(three_d ? shape_t{N, O, Do, Ho, Wo} : shape_t{N, O, Ho, Wo});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < Do * Ho * Wo; ++k) y.v[(n * O + o) * Do * Ho * Wo + k] = b ? b->v[o] : 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t z = 0; z < D; ++z)
        for (int64_t r = 0; r < H; ++r)
          for (int64_t q = 0; q < W; ++q) {
            const double xv = x.v[(((n * C + c) * D + z) * H + r) * W + q];
            for (int64_t o = 0; o < O; ++o)
              for (int64_t a = 0; a < kd; ++a)
                for (int64_t p = 0; p < kh; ++p)
                  for (int64_t e = 0; e < kw; ++e) {
                    const int64_t zz = z * stride - pd + a, rr = r * stride - pad + p,
                                  cc = q * stride - pad + e;
                    if (zz < 0 || zz >= Do || rr < 0 || rr >= Ho || cc < 0 || cc >= Wo) continue;
                    y.v[(((n * O + o) * Do + zz) * Ho + rr) * Wo + cc] +=
                        xv * w.v[(((c * O + o) * kd + a) * kh + p) * kw + e];
                  }
          }
  return y;
}

TEST(ReferenceCudaOps, Conv2dWithStridePaddingDilationGroups) {
  const ten x = f32(values({2, 4, 7, 6}, 6)), w = f32(values({6, 2, 3, 2}, 7)), b = f32(values({6}, 8));
  expect_close(run({x, w, b}, {op("conv2d", {"a", "b"}, {{"stride", 2}, {"padding", 1}, {"groups", 2}})}),
               conv_loops(x, w, &b, 2, 1, 1, 2, false));
  const ten w1 = f32(values({3, 4, 2, 2}, 9));
  expect_close(run({x, w1}, {op("conv2d", {"a"}, {{"dilation", 2}})}),
               conv_loops(x, w1, nullptr, 1, 0, 2, 1, false));
}

TEST(ReferenceCudaOps, Conv3d) {
  const ten x = f32(values({1, 2, 4, 5, 4}, 10)), w = f32(values({3, 2, 2, 3, 2}, 11)),
            b = f32(values({3}, 12));
  expect_close(run({x, w, b}, {op("conv3d", {"a", "b"}, {{"padding", 1}})}),
               conv_loops(x, w, &b, 1, 1, 1, 1, true));
}

TEST(ReferenceCudaOps, ConvTranspose) {
  const ten x = f32(values({2, 3, 4, 3}, 13)), w = f32(values({3, 2, 3, 3}, 14)), b = f32(values({2}, 15));
  expect_close(run({x, w, b}, {op("conv_transpose2d", {"a", "b"})}),
               conv_transpose_loops(x, w, &b, 1, 0, 0, false));
  expect_close(
      run({x, w}, {op("conv_transpose2d", {"a"}, {{"stride", 2}, {"padding", 1}, {"output_padding", 1}})}),
      conv_transpose_loops(x, w, nullptr, 2, 1, 1, false));
  const ten x3 = f32(values({1, 2, 3, 3, 2}, 16)), w3 = f32(values({2, 3, 2, 2, 2}, 17)),
            b3 = f32(values({3}, 18));
  expect_close(run({x3, w3, b3}, {op("conv_transpose3d", {"a", "b"}, {{"stride", 2}})}),
               conv_transpose_loops(x3, w3, &b3, 2, 0, 0, true));
}

// Pooling over the trailing `nd` dims of [N, C, ...] with cubic windows; avg counts padding.
ten pool_loops(const ten& x, int nd, int64_t k, int64_t s, int64_t p, bool max) {
  const int64_t NC = x.shape[0] * x.shape[1];
  const int64_t D = nd == 3 ? x.shape[2] : 1, H = x.shape[nd == 3 ? 3 : 2], W = x.shape[nd == 3 ? 4 : 3];
  const int64_t kd = nd == 3 ? k : 1, pd = nd == 3 ? p : 0, sd = nd == 3 ? s : 1;
  const int64_t Do = (D + 2 * pd - kd) / sd + 1, Ho = (H + 2 * p - k) / s + 1, Wo = (W + 2 * p - k) / s + 1;
  shape_t shape = {x.shape[0], x.shape[1]};
  if (nd == 3) shape.push_back(Do);
  shape.push_back(Ho), shape.push_back(Wo);
  ten y = zeros(shape);
  int64_t i = 0;
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t z = 0; z < Do; ++z)
      for (int64_t r = 0; r < Ho; ++r)
        for (int64_t c = 0; c < Wo; ++c, ++i) {
          double acc = max ? -1e300 : 0.0;
          for (int64_t a = 0; a < kd; ++a)
            for (int64_t b = 0; b < k; ++b)
              for (int64_t e = 0; e < k; ++e) {
                const int64_t zz = z * sd - pd + a, rr = r * s - p + b, cc = c * s - p + e;
                if (zz < 0 || zz >= D || rr < 0 || rr >= H || cc < 0 || cc >= W) continue;
                const double v = x.v[((nc * D + zz) * H + rr) * W + cc];
                acc = max ? std::max(acc, v) : acc + v;
              }
          y.v[i] = max ? acc : acc / static_cast<double>(kd * k * k);
        }
  return y;
}

TEST(ReferenceCudaOps, Pooling) {
  const ten x = f32(values({2, 3, 7, 6}, 19));
  expect_close(run({x}, {op("max_pool2d", {}, {{"kernel", 2}})}), pool_loops(x, 2, 2, 2, 0, true));
  expect_close(run({x}, {op("max_pool2d", {}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}})}),
               pool_loops(x, 2, 3, 2, 1, true));
  expect_close(run({x}, {op("avg_pool2d", {}, {{"kernel", 3}, {"stride", 1}, {"padding", 1}})}),
               pool_loops(x, 2, 3, 1, 1, false));
  const ten x3 = f32(values({1, 2, 4, 5, 6}, 20));
  expect_close(run({x3}, {op("max_pool3d", {}, {{"kernel", 2}})}), pool_loops(x3, 3, 2, 2, 0, true));
  expect_close(run({x3}, {op("avg_pool3d", {}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}})}),
               pool_loops(x3, 3, 3, 2, 1, false));
  ten gap = zeros({1, 2});
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t k = 0; k < 120; ++k) gap.v[c] += x3.v[c * 120 + k];
    gap.v[c] /= 120;
  }
  expect_close(run({x3}, {op("global_avg_pool")}), gap);
}

// Normalizes x [N, C, S] (S = flattened spatial) over groups of (n, channels [c0, c1)) or all n.
ten norm_loops(const ten& x, const std::string& kind, int64_t groups, const ten* w, const ten* b,
               double eps) {
  const int64_t N = x.shape[0], C = x.shape[1], S = numel(x.shape) / (N * C);
  ten y = x;
  auto normalize = [&](const std::vector<int64_t>& idx) {
    double mean = 0, var = 0;
    for (auto i : idx) mean += x.v[i];
    mean /= idx.size();
    for (auto i : idx) var += (x.v[i] - mean) * (x.v[i] - mean);
    var /= idx.size();  // biased
    for (auto i : idx) y.v[i] = (x.v[i] - mean) / std::sqrt(var + eps);
  };
  if (kind == "batch_norm") {
    for (int64_t c = 0; c < C; ++c) {
      std::vector<int64_t> idx;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) idx.push_back((n * C + c) * S + s);
      normalize(idx);
    }
  } else {
    const int64_t per = C / groups;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        std::vector<int64_t> idx;
        for (int64_t c = g * per; c < (g + 1) * per; ++c)
          for (int64_t s = 0; s < S; ++s) idx.push_back((n * C + c) * S + s);
        normalize(idx);
      }
  }
  if (w)
    for (int64_t i = 0; i < numel(x.shape); ++i) {
      const int64_t c = (i / S) % C;
      y.v[i] = y.v[i] * w->v[c] + b->v[c];
    }
  return y;
}

TEST(ReferenceCudaOps, ChannelNorms) {
  const ten x = f32(values({3, 4, 3, 5}, 21)), w = f32(values({4}, 22)), b = f32(values({4}, 23));
  expect_close(run({x, w, b}, {op("batch_norm", {"a", "b"})}), norm_loops(x, "batch_norm", 0, &w, &b, 1e-5),
               1e-4);
  expect_close(run({x}, {op("instance_norm")}), norm_loops(x, "group_norm", 4, nullptr, nullptr, 1e-5), 1e-4);
  expect_close(run({x, w, b}, {op("instance_norm", {"a", "b"}, {{"eps", 1e-3}})}),
               norm_loops(x, "group_norm", 4, &w, &b, 1e-3), 1e-4);
  expect_close(run({x, w, b}, {op("group_norm", {"a", "b"}, {{"groups", 2}})}),
               norm_loops(x, "group_norm", 2, &w, &b, 1e-5), 1e-4);
}

TEST(ReferenceCudaOps, Losses) {
  const ten v = f32(values({3, 5}, 24)), t = f32(values({3, 5}, 25));
  const ten p = f32(values({3, 5}, 26, /*positive=*/true));
  auto scalar = [](double x) { return ten{{}, {x}}; };
  double mse = 0, huber = 0;
  for (size_t i = 0; i < v.v.size(); ++i) {
    const double d = v.v[i] - t.v[i];
    mse += d * d;
    huber += std::abs(d) < 1 ? 0.5 * d * d : std::abs(d) - 0.5;
  }
  expect_close(run({v, t}, {op("mse_loss", {"a"})}), scalar(mse / 15));
  expect_close(run({v, t}, {op("huber_loss", {"a"})}), scalar(huber / 15));
  double huber2 = 0;
  for (size_t i = 0; i < v.v.size(); ++i) {
    const double d = std::abs(v.v[i] - t.v[i]);
    huber2 += d < 2 ? 0.5 * d * d : 2 * (d - 1);
  }
  expect_close(run({v, t}, {op("huber_loss", {"a"}, {{"delta", 2}})}), scalar(huber2 / 15));
  // cross_entropy with probability rows as targets.
  double ce = 0, kl = 0, cos = 0;
  for (int64_t r = 0; r < 3; ++r) {
    double mx = -1e300, z = 0, tsum = 0;
    for (int64_t c = 0; c < 5; ++c) mx = std::max(mx, v.at({r, c})), tsum += p.at({r, c});
    for (int64_t c = 0; c < 5; ++c) z += std::exp(v.at({r, c}) - mx);
    for (int64_t c = 0; c < 5; ++c) ce -= p.at({r, c}) * (v.at({r, c}) - mx - std::log(z));
    double dot = 0, nv = 0, nt = 0;
    for (int64_t c = 0; c < 5; ++c)
      dot += v.at({r, c}) * t.at({r, c}), nv += v.at({r, c}) * v.at({r, c}),
          nt += t.at({r, c}) * t.at({r, c});
    cos += 1 - dot / std::max(std::sqrt(nv) * std::sqrt(nt), 1e-8);
  }
  for (size_t i = 0; i < v.v.size(); ++i) kl += p.v[i] * (std::log(p.v[i]) - v.v[i]);
  expect_close(run({v, p}, {op("cross_entropy", {"a"})}), scalar(ce / 3));
  expect_close(run({v, p}, {op("kl_div", {"a"})}), scalar(kl / 3));
  expect_close(run({v, t}, {op("cosine_loss", {"a"})}), scalar(cos / 3));
}

TEST(ReferenceCudaOps, Bmm) {
  const ten x = f32(values({2, 3, 4}, 27)), w = f32(values({2, 4, 5}, 28));
  ten want = zeros({2, 3, 5});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 4; ++k) want.at({b, i, j}) += x.at({b, i, k}) * w.at({b, k, j});
  expect_close(run({x, w}, {op("bmm", {"a"})}), want);
}

ten attention_loops(const ten& q, const ten& k, const ten& v, double scale, bool causal) {
  const int64_t BH = q.shape[0] * q.shape[1], S = q.shape[2], D = q.shape[3], T = k.shape[2];
  ten y = zeros(q.shape);
  for (int64_t h = 0; h < BH; ++h)
    for (int64_t i = 0; i < S; ++i) {
      std::vector<double> sc(T);
      double mx = -1e300, z = 0;
      for (int64_t j = 0; j < T; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q.v[(h * S + i) * D + d] * k.v[(h * T + j) * D + d];
        sc[j] = causal && j > i ? -std::numeric_limits<double>::infinity() : dot * scale;
        mx = std::max(mx, sc[j]);
      }
      for (auto& e : sc) z += (e = std::exp(e - mx));
      for (int64_t j = 0; j < T; ++j)
        for (int64_t d = 0; d < D; ++d) y.v[(h * S + i) * D + d] += sc[j] / z * v.v[(h * T + j) * D + d];
    }
  return y;
}

TEST(ReferenceCudaOps, Attention) {
  const ten q = f32(values({2, 2, 5, 4}, 29)), k = f32(values({2, 2, 6, 4}, 30)),
            v = f32(values({2, 2, 6, 4}, 31));
  expect_close(run({q, k, v}, {op("attention", {"a", "b"})}), attention_loops(q, k, v, 0.5, false));
  expect_close(run({q, k, v}, {op("attention", {"a", "b"}, {{"scale", 0.3}})}),
               attention_loops(q, k, v, 0.3, false));
  const ten k5 = f32(values({2, 2, 5, 4}, 32)), v5 = f32(values({2, 2, 5, 4}, 33));
  expect_close(run({q, k5, v5}, {op("attention", {"a", "b"}, {{"causal", 1}})}),
               attention_loops(q, k5, v5, 0.5, true));
}

task_spec conv_chain_task() {
  task_spec t;
  t.name = "views";
  tensor_spec x{"x", {2, 3, 6, 6}};
  tensor_spec w{"W", {4, 3, 3, 3}};
  w.dist = "uniform", w.lo = -0.2, w.hi = 0.2, w.param = true;
  tensor_spec s{"s", {4, 1, 1}};
  s.dist = "positive", s.param = true;
  tensor_spec h{"h", {2, 4, 4, 4}};
  h.dist = "heavy_tailed";
  t.inputs = {x, w, s, h};
  t.ops = {op("conv2d", {"W"}), op("mul", {"s"}), op("add", {"h"}), op("mse_loss", {"h"})};
  return t;
}

TEST(ReferenceViews, FillInputsOnTheHostEqualsMakeInputs) {
  auto ref = reference_executor::create(conv_chain_task());
  ASSERT_TRUE(ref) << ref.message();
  for (auto variant : {input_variant::nominal, input_variant::heavy_tailed}) {
    const auto want = ref->make_inputs(7, variant);
    std::vector<host_tensor> bufs;
    std::vector<cru_tensor> views;
    for (const auto& in : ref->task().inputs) bufs.emplace_back(in.dtype, in.shape);
    for (const auto& b : bufs) views.push_back(b.view());
    ref->fill_inputs(views, 7, variant, -1);
    for (size_t i = 0; i < bufs.size(); ++i)
      EXPECT_EQ(std::memcmp(bufs[i].data(), want[i].data(), want[i].bytes()), 0) << i;
  }
  // A view that does not match the task is a caller bug.
  std::vector<host_tensor> wrong;
  for (const auto& in : ref->task().inputs) wrong.emplace_back(in.dtype, shape_t{1});
  std::vector<cru_tensor> views;
  for (const auto& b : wrong) views.push_back(b.view());
  EXPECT_THROW(ref->fill_inputs(views, 7, input_variant::nominal, -1), std::invalid_argument);
}

TEST(ReferenceViews, RunViewsOnTheHostEqualsRun) {
  auto ref = reference_executor::create(conv_chain_task());
  ASSERT_TRUE(ref) << ref.message();
  const auto inputs = ref->make_inputs(3);
  host_tensor want = ref->make_output();
  ref->run(inputs, want);
  EXPECT_TRUE(want.shape().empty());  // the loss is a 0-dim scalar
  std::vector<cru_tensor> views;
  for (const auto& t : inputs) views.push_back(t.view());
  host_tensor got = ref->make_output();
  *got.as<float>() = -1.0f;
  const cru_tensor out = got.view();
  ref->run_views(views, &out, -1);
  EXPECT_EQ(*got.as<float>(), *want.as<float>());
  *got.as<float>() = -1.0f;
  ref->run_views(views, nullptr, -1);  // eager timing: nothing is written
  EXPECT_EQ(*got.as<float>(), -1.0f);
  // Strided views are read as they are: a transposed input of the matmul task.
  task_spec mm;
  mm.name = "mm";
  mm.inputs = {tensor_spec{"x", {3, 4}}, tensor_spec{"W", {4, 2}}};
  mm.ops = {op("matmul", {"W"})};
  auto r = reference_executor::create(mm);
  ASSERT_TRUE(r) << r.message();
  auto in = r->make_inputs(1);
  host_tensor mm_want = r->make_output();
  r->run(in, mm_want);
  host_tensor xt("float32", {4, 3});  // x stored transposed
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) xt.as<float>()[j * 3 + i] = in[0].as<float>()[i * 4 + j];
  cru_tensor xv = xt.view();
  xv.shape[0] = 3, xv.shape[1] = 4, xv.stride[0] = 1, xv.stride[1] = 3;
  host_tensor mm_got = r->make_output();
  const cru_tensor mo = mm_got.view();
  r->run_views({xv, in[1].view()}, &mo, -1);
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(mm_got.as<float>()[i], mm_want.as<float>()[i]);
}

TEST(ReferenceViews, StrictFp32IsCallableWithoutCuda) {
  set_reference_strict_fp32();  // a no-op for CPU work, and must not throw on a CPU-only LibTorch
}

}  // namespace
}  // namespace crucible::kernels
