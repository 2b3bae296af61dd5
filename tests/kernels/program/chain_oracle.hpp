#pragma once
// An independent double-precision interpreter of a task's ORIGINAL chain, straight from op_catalog's
// semantics: the oracle the emitted programs (rewritten, fused, approximated) are checked against.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"
#include "messages/task.hpp"

namespace crucible::kernels::testing {

/// inputs: one float buffer per task input (task order). Returns the output, flattened.
inline std::vector<double> run_chain_oracle(const task_spec& task,
                                            const std::vector<std::vector<float>>& inputs) {
  shape_t shape = task.inputs[0].shape;
  std::vector<double> v(inputs[0].begin(), inputs[0].end());
  auto side = [&](const std::string& name) -> const std::vector<float>& {
    return inputs[input_index(task, name)];
  };
  for (const auto& op : task.ops) {
    const std::string& o = op.op;
    const int64_t n = static_cast<int64_t>(v.size());
    const int64_t cols = shape.back(), rows = n / cols;
    auto a = [&](const char* name) { return op_attr(op, name); };
    auto unary = [&](auto f) {
      for (auto& x : v) x = f(x);
    };
    if (o == "relu")
      unary([](double x) { return x > 0 ? x : 0.0; });
    else if (o == "leaky_relu")
      unary([&](double x) { return x > 0 ? x : a("alpha") * x; });
    else if (o == "gelu")
      unary([](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
    else if (o == "gelu_tanh")
      unary([](double x) {
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      });
    else if (o == "silu")
      unary([](double x) { return x / (1 + std::exp(-x)); });
    else if (o == "sigmoid")
      unary([](double x) { return 1 / (1 + std::exp(-x)); });
    else if (o == "tanh")
      unary([](double x) { return std::tanh(x); });
    else if (o == "exp")
      unary([](double x) { return std::exp(x); });
    else if (o == "abs")
      unary([](double x) { return std::fabs(x); });
    else if (o == "neg")
      unary([](double x) { return -x; });
    else if (o == "square")
      unary([](double x) { return x * x; });
    else if (o == "softplus")
      unary([](double x) { return x > 20 ? x : std::log1p(std::exp(x)); });
    else if (o == "clamp")
      unary([&](double x) { return std::min(std::max(x, a("lo")), a("hi")); });
    else if (o == "mul_scalar")
      unary([&](double x) { return x * a("s"); });
    else if (o == "add_scalar")
      unary([&](double x) { return x + a("s"); });
    else if (o == "add" || o == "sub" || o == "mul") {
      const auto& t = side(op.args[0]);
      const bool full = task.inputs[input_index(task, op.args[0])].shape == shape;
      for (int64_t i = 0; i < n; ++i) {
        const double y = t[full ? i : i % cols];
        v[i] = o == "add" ? v[i] + y : o == "sub" ? v[i] - y : v[i] * y;
      }
    } else if (o == "row_sum" || o == "row_mean" || o == "row_max") {
      std::vector<double> r(rows);
      for (int64_t i = 0; i < rows; ++i) {
        double s = o == "row_max" ? -INFINITY : 0.0;
        for (int64_t c = 0; c < cols; ++c)
          s = o == "row_max" ? std::max(s, v[i * cols + c]) : s + v[i * cols + c];
        r[i] = o == "row_mean" ? s / cols : s;
      }
      v = r;
      shape.pop_back();
    } else if (o == "softmax" || o == "log_softmax") {
      for (int64_t i = 0; i < rows; ++i) {
        double* x = &v[i * cols];
        double m = *std::max_element(x, x + cols), s = 0;
        for (int64_t c = 0; c < cols; ++c) s += std::exp(x[c] - m);
        for (int64_t c = 0; c < cols; ++c)
          x[c] = o == "softmax" ? std::exp(x[c] - m) / s : x[c] - m - std::log(s);
      }
    } else if (o == "layer_norm" || o == "rms_norm") {
      const std::vector<float>* w = op.args.size() > 0 ? &side(op.args[0]) : nullptr;
      const std::vector<float>* b = op.args.size() > 1 ? &side(op.args[1]) : nullptr;
      for (int64_t i = 0; i < rows; ++i) {
        double* x = &v[i * cols];
        double mean = 0, var = 0;
        if (o == "layer_norm") {
          for (int64_t c = 0; c < cols; ++c) mean += x[c];
          mean /= cols;
        }
        for (int64_t c = 0; c < cols; ++c) var += (x[c] - mean) * (x[c] - mean);
        const double rstd = 1 / std::sqrt(var / cols + a("eps"));
        for (int64_t c = 0; c < cols; ++c)
          x[c] = (x[c] - mean) * rstd * (w ? (*w)[c] : 1.0) + (b ? (*b)[c] : 0.0);
      }
    } else if (o == "matmul") {
      const auto& w = side(op.args[0]);
      const int64_t k = cols, nn = static_cast<int64_t>(w.size()) / k;
      std::vector<double> r(rows * nn, 0.0);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          for (int64_t j = 0; j < nn; ++j)
            r[i * nn + j] += v[i * k + kk] * static_cast<double>(w[kk * nn + j]);
      v = r;
      shape.back() = nn;
    }
  }
  return v;
}

}  // namespace crucible::kernels::testing
