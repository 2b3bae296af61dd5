#include "kernels/task/chain_shapes.hpp"

#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

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
        if (s != v && !(s.size() == 1 && s[0] == last))
          return make_error(at + ": side input '" + args[0]->name + "' has shape " + shape_str(s) +
                            "; expected the running shape " + shape_str(v) + " or a row vector [" +
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
    }
    out.after.push_back(v);
  }
  return out;
}

}  // namespace crucible::kernels
