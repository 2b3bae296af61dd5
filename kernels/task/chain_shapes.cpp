#include "kernels/task/chain_shapes.hpp"

#include <cmath>

#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {
namespace {

// An integer attribute in [lo, hi], or an error naming it.
expected<int64_t> int_attr(const op_spec& op, const std::string& at, const char* name, int64_t lo,
                           int64_t hi) {
  const double x = op_attr(op, name);
  if (x != std::floor(x) || x < static_cast<double>(lo) || x > static_cast<double>(hi))
    return make_error(at + ": attrs." + name + " must be an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got " + std::to_string(x));
  return static_cast<int64_t>(x);
}

// Numpy broadcasting of a side input onto the running shape, which must not change.
bool broadcasts_to(const shape_t& side, const shape_t& v) {
  if (side.size() > v.size()) return false;
  const size_t off = v.size() - side.size();
  for (size_t i = 0; i < side.size(); ++i)
    if (side[i] != 1 && side[i] != v[off + i]) return false;
  return true;
}

// Output shape of a conv, transposed conv or pool layer on [N, C, spatial..] (torch's formulas).
expected<shape_t> spatial_layer(const op_spec& op, const op_info& info, const std::string& at,
                                const std::vector<const tensor_spec*>& args, const shape_t& v) {
  const std::string& name = op.op;
  const size_t rank = name.find("3d") != std::string::npos ? 5 : 4;
  const size_t spatial = rank - 2;
  if (v.size() != rank)
    return make_error(at + ": needs a running value of rank " + std::to_string(rank) + " [N, C, " +
                      (spatial == 3 ? "D, H, W" : "H, W") + "], got " + shape_str(v));
  shape_t out = v;
  if (info.cls == op_class::pool) {
    auto k = int_attr(op, at, "kernel", 1, 1 << 20);
    if (!k) return k.err();
    auto s = int_attr(op, at, "stride", 0, 1 << 20);
    if (!s) return s.err();
    auto p = int_attr(op, at, "padding", 0, *k / 2);  // torch: padding at most half the kernel
    if (!p) return p.err();
    const int64_t stride = *s == 0 ? *k : *s;
    for (size_t d = 2; d < rank; ++d) {
      out[d] = (v[d] + 2 * *p - *k) / stride + 1;
      if (v[d] + 2 * *p < *k)
        return make_error(at + ": kernel " + std::to_string(*k) + " is larger than the padded input " +
                          shape_str(v));
    }
    return out;
  }
  const bool transposed = name.rfind("conv_transpose", 0) == 0;
  const auto& w = args[0]->shape;
  const int64_t c = v[1];
  auto s = int_attr(op, at, "stride", 1, 1 << 20);
  if (!s) return s.err();
  auto p = int_attr(op, at, "padding", 0, 1 << 20);
  if (!p) return p.err();
  int64_t dil = 1, groups = 1, out_pad = 0;
  if (transposed) {
    auto op_ = int_attr(op, at, "output_padding", 0, *s - 1);  // torch: below the stride
    if (!op_) return op_.err();
    out_pad = *op_;
  } else {
    auto d = int_attr(op, at, "dilation", 1, 1 << 20);
    if (!d) return d.err();
    auto g = int_attr(op, at, "groups", 1, c);
    if (!g) return g.err();
    dil = *d, groups = *g;
    if (c % groups)
      return make_error(at + ": groups " + std::to_string(groups) + " must divide C = " + std::to_string(c));
  }
  std::string want =
      transposed ? "[" + std::to_string(c) + ", O, k..]" : "[O, " + std::to_string(c / groups) + ", k..]";
  if (w.size() != rank || w[transposed ? 0 : 1] != (transposed ? c : c / groups))
    return make_error(at + ": weight '" + args[0]->name + "' must have shape " + want + " (rank " +
                      std::to_string(rank) + "), got " + shape_str(w));
  const int64_t o = transposed ? w[1] : w[0];
  if (o % groups)
    return make_error(at + ": groups " + std::to_string(groups) + " must divide the output channels " +
                      std::to_string(o));
  if (args.size() > 1 && args[1]->shape != shape_t{o})
    return make_error(at + ": bias '" + args[1]->name + "' must have shape [" + std::to_string(o) +
                      "], got " + shape_str(args[1]->shape));
  out[1] = o;
  for (size_t d = 2; d < rank; ++d) {
    const int64_t k = w[d];
    out[d] = transposed ? (v[d] - 1) * *s - 2 * *p + (k - 1) + out_pad + 1
                        : (v[d] + 2 * *p - dil * (k - 1) - 1) / *s + 1;
    if (out[d] < 1 || (!transposed && v[d] + 2 * *p < dil * (k - 1) + 1))
      return make_error(at + ": the kernel " + shape_str(w) + " does not fit the input " + shape_str(v) +
                        " (output dim " + std::to_string(d) + " would be " + std::to_string(out[d]) + ")");
  }
  return out;
}

}  // namespace

int input_index(const task_spec& task, const std::string& name) {
  for (size_t i = 0; i < task.inputs.size(); ++i)
    if (task.inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

int64_t numel(const shape_t& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_str(const shape_t& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

double task_atol(const task_spec& task) {
  return task.atol >= 0 ? task.atol
                        : default_tolerance(task.inputs.empty() ? "float32" : task.inputs[0].dtype);
}
double task_rtol(const task_spec& task) {
  return task.rtol >= 0 ? task.rtol
                        : default_tolerance(task.inputs.empty() ? "float32" : task.inputs[0].dtype);
}

expected<chain_shapes> infer_shapes(const task_spec& task) {
  const std::string where = "task '" + task.name + "'";
  if (task.inputs.empty()) return make_error(where + ": 'inputs' is empty; inputs[0] starts the chain");
  if (task.ops.empty()) return make_error(where + ": 'ops' is empty");
  for (size_t i = 0; i < task.inputs.size(); ++i) {
    const auto& in = task.inputs[i];
    const std::string at = where + ": inputs[" + std::to_string(i) + "] ('" + in.name + "')";
    if (in.name.empty()) return make_error(at + ": 'name' is empty");
    if (input_index(task, in.name) != static_cast<int>(i)) return make_error(at + ": duplicate input name");
    if (in.shape.empty() || in.shape.size() > 8) return make_error(at + ": shape must have 1 to 8 dims");
    for (auto d : in.shape)
      if (d <= 0) return make_error(at + ": shape " + shape_str(in.shape) + " has a non-positive dim");
    if (dtype_code(in.dtype) < 0)
      return make_error(at + ": unknown dtype '" + in.dtype +
                        "' (expected float32, float16, bfloat16, float64, int32, int64 or bool)");
    if (in.dist != "normal" && in.dist != "uniform" && in.dist != "heavy_tailed" && in.dist != "positive")
      return make_error(at + ": unknown dist '" + in.dist +
                        "' (expected normal, uniform, heavy_tailed, positive)");
    if (in.dist == "uniform" && !(in.lo < in.hi)) return make_error(at + ": uniform needs lo < hi");
  }
  chain_shapes out;
  out.input = task.inputs[0].shape;
  shape_t v = out.input;
  for (size_t i = 0; i < task.ops.size(); ++i) {
    const auto& op = task.ops[i];
    const std::string at = where + ": ops[" + std::to_string(i) + "] (" + op.op + ")";
    const op_info* info = find_op(op.op);
    if (!info) {
      std::string known;
      for (const auto& o : op_catalog()) known += (known.empty() ? "" : ", ") + o.name;
      return make_error(at + ": unknown op; known ops: " + known);
    }
    int nargs = static_cast<int>(op.args.size());
    if (nargs < info->min_args || nargs > info->max_args)
      return make_error(at + ": takes " + std::to_string(info->min_args) + ".." +
                        std::to_string(info->max_args) + " side inputs in 'args', got " +
                        std::to_string(nargs));
    for (const auto& a : info->attrs)
      if (a.required && !op.attrs.count(a.name)) return make_error(at + ": attrs." + a.name + " is required");
    for (const auto& [k, val] : op.attrs) {
      bool known = false;
      for (const auto& a : info->attrs) known |= a.name == k;
      if (!known) return make_error(at + ": unknown attribute attrs." + k);
    }
    std::vector<const tensor_spec*> args;
    for (const auto& name : op.args) {
      int idx = input_index(task, name);
      if (idx < 0) return make_error(at + ": side input '" + name + "' is not among the task's inputs");
      if (idx == 0) return make_error(at + ": side input '" + name + "' is inputs[0], the chain's own start");
      args.push_back(&task.inputs[idx]);
    }
    const int64_t last = v.empty() ? 1 : v.back();
    switch (info->cls) {
      case op_class::unary:
      case op_class::scalar:
        if (op.op == "clamp" && !(op_attr(op, "lo") <= op_attr(op, "hi")))
          return make_error(at + ": needs attrs.lo <= attrs.hi");
        break;
      case op_class::binary: {
        const auto& s = args[0]->shape;
        if (!broadcasts_to(s, v))
          return make_error(at + ": side input '" + args[0]->name + "' has shape " + shape_str(s) +
                            "; expected a shape that broadcasts (numpy rules) to the running shape " +
                            shape_str(v) + " without changing it, e.g. " + shape_str(v) + " or [" +
                            std::to_string(last) + "]");
        break;
      }
      case op_class::row_reduce:
        if (v.size() < 2) return make_error(at + ": needs a running value of rank >= 2, got " + shape_str(v));
        v.pop_back();
        break;
      case op_class::row_norm:
        if (v.size() < 2) return make_error(at + ": needs a running value of rank >= 2, got " + shape_str(v));
        for (const auto* a : args)
          if (a->shape != shape_t{last})
            return make_error(at + ": '" + a->name + "' must have shape [" + std::to_string(last) +
                              "], got " + shape_str(a->shape));
        if (op.attrs.count("eps") && !(op_attr(op, "eps") > 0))
          return make_error(at + ": attrs.eps must be > 0");
        break;
      case op_class::gemm: {
        const auto& w = args[0]->shape;
        if (v.size() < 2) return make_error(at + ": needs a running value of rank >= 2, got " + shape_str(v));
        if (w.size() != 2 || w[0] != last)
          return make_error(at + ": weight '" + args[0]->name + "' must have shape [" + std::to_string(last) +
                            ", N], got " + shape_str(w));
        v.back() = w[1];
        break;
      }
      case op_class::dim_reduce: {
        const auto r = static_cast<int64_t>(v.size());
        if (r < 2) return make_error(at + ": needs a running value of rank >= 2, got " + shape_str(v));
        auto d = int_attr(op, at, "dim", -r, r - 1);
        if (!d) return d.err();
        v.erase(v.begin() + (*d < 0 ? *d + r : *d));
        break;
      }
      case op_class::scan:
        for (const char* flag : {"reverse", "exclusive"})
          if (auto f = int_attr(op, at, flag, 0, 1); !f) return f.err();
        break;
      case op_class::conv:
      case op_class::pool: {
        if (op.op == "global_avg_pool") {
          if (v.size() < 3)
            return make_error(at + ": needs a running value [N, C, spatial..] of rank >= 3, got " +
                              shape_str(v));
          v.resize(2);
          break;
        }
        auto s = spatial_layer(op, *info, at, args, v);
        if (!s) return s.err();
        v = *s;
        break;
      }
      case op_class::channel_norm: {
        const bool instance = op.op == "instance_norm";
        if (v.size() < (instance ? 3u : 2u))
          return make_error(at + ": needs a running value [N, C" + (instance ? ", spatial.." : ", ..") +
                            "] of rank >= " + (instance ? "3" : "2") + ", got " + shape_str(v));
        if (nargs == 1) return make_error(at + ": takes no side inputs or both [w, b], got one");
        for (const auto* a : args)
          if (a->shape != shape_t{v[1]})
            return make_error(at + ": '" + a->name + "' must have shape [" + std::to_string(v[1]) +
                              "] (one per channel), got " + shape_str(a->shape));
        if (!(op_attr(op, "eps") > 0)) return make_error(at + ": attrs.eps must be > 0");
        // Statistics of one value are undefined (torch refuses them in training-mode batch_norm).
        const int64_t per_stat = op.op == "batch_norm" ? numel(v) / v[1] : numel(v) / (v[0] * v[1]);
        if (op.op == "group_norm") {
          auto g = int_attr(op, at, "groups", 1, v[1]);
          if (!g) return g.err();
          if (v[1] % *g)
            return make_error(at + ": attrs.groups " + std::to_string(*g) +
                              " must divide C = " + std::to_string(v[1]));
        } else if (per_stat < 2) {
          return make_error(at + ": needs more than one value per statistic, got " + shape_str(v));
        }
        break;
      }
      case op_class::loss:
        if (v.empty()) return make_error(at + ": needs a running value of rank >= 1, got a scalar");
        if (args[0]->shape != v)
          return make_error(at + ": target '" + args[0]->name + "' must have the running shape " +
                            shape_str(v) + ", got " + shape_str(args[0]->shape));
        if (op.op == "huber_loss" && !(op_attr(op, "delta") > 0))
          return make_error(at + ": attrs.delta must be > 0");
        v = {};
        break;
      case op_class::bmm: {
        const auto& w = args[0]->shape;
        if (v.size() != 3) return make_error(at + ": needs a running value [B, M, K], got " + shape_str(v));
        if (w.size() != 3 || w[0] != v[0] || w[1] != v[2])
          return make_error(at + ": weight '" + args[0]->name + "' must have shape [" + std::to_string(v[0]) +
                            ", " + std::to_string(v[2]) + ", N], got " + shape_str(w));
        v[2] = w[2];
        break;
      }
      case op_class::attention: {
        if (v.size() != 4)
          return make_error(at + ": needs a running value q [B, H, S, D], got " + shape_str(v));
        const auto& k = args[0]->shape;
        const std::string want =
            "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", Skv, " + std::to_string(v[3]) + "]";
        for (const auto* a : args)
          if (a->shape.size() != 4 || a->shape[0] != v[0] || a->shape[1] != v[1] || a->shape[3] != v[3] ||
              a->shape[2] != k[2])
            return make_error(at + ": '" + a->name + "' must have shape " + want + " (k and v alike), got " +
                              shape_str(a->shape));
        auto causal = int_attr(op, at, "causal", 0, 1);
        if (!causal) return causal.err();
        if (*causal && k[2] != v[2])
          return make_error(at + ": causal attention needs Skv == S (" + std::to_string(v[2]) + "), got " +
                            std::to_string(k[2]));
        if (!(op_attr(op, "scale") >= 0)) return make_error(at + ": attrs.scale must be >= 0 (0: 1/sqrt(D))");
        break;
      }
    }
    out.after.push_back(v);
  }
  return out;
}

}  // namespace crucible::kernels
