#include "kernels/task/task_cost.hpp"

#include <algorithm>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

namespace {

// Whether the op leaves every element of the running value in the output (no reduction of any kind).
bool shape_preserving(op_class c) {
  switch (c) {
    case op_class::unary:
    case op_class::scalar:
    case op_class::binary:
    case op_class::row_norm:
    case op_class::scan:
    case op_class::channel_norm:
      return true;
    default:
      return false;
  }
}

const shape_t* side_shape(const task_spec& task, const op_spec& op, size_t arg) {
  if (arg >= op.args.size()) return nullptr;
  int i = input_index(task, op.args[arg]);
  return i < 0 ? nullptr : &task.inputs[static_cast<size_t>(i)].shape;
}

// Multiply-adds (x2) of op k, whose input has shape `in` and output `out`.
double product_flops(const task_spec& task, size_t k, const shape_t& in, const shape_t& out) {
  const op_spec& op = task.ops[k];
  const op_info* info = find_op(op.op);
  if (!info) return 0.0;
  const shape_t* w = side_shape(task, op, 0);
  switch (info->cls) {
    case op_class::gemm:  // [.., K] x [K, N]
    case op_class::bmm:   // [B, M, K] x [B, K, N]
      return in.empty() ? 0.0 : 2.0 * static_cast<double>(numel(out)) * static_cast<double>(in.back());
    case op_class::attention: {  // q [B, H, S, D], k and v [B, H, Skv, D]: two products
      const shape_t* kv = w;
      if (!kv || kv->size() < 2 || in.size() < 4) return 0.0;
      return 4.0 * static_cast<double>(numel(in)) * static_cast<double>((*kv)[kv->size() - 2]);
    }
    case op_class::conv: {  // every output element: C/groups x kernel multiply-adds (transposed: per input)
      if (!w || w->size() < 3) return 0.0;
      double per = 1.0;
      for (size_t d = 1; d < w->size(); ++d) per *= static_cast<double>((*w)[d]);
      const bool transposed = op.op.rfind("conv_transpose", 0) == 0;
      if (transposed) return 2.0 * static_cast<double>(numel(in)) * per;
      return 2.0 * static_cast<double>(numel(out)) * per;
    }
    default:
      return 0.0;
  }
}

}  // namespace

task_cost minimum_cost(const task_spec& task) {
  task_cost c;
  // A KernelBench module's file says nothing of its work: its reference traces a forward pass instead
  // (kernels/python/kernelbench_cost.hpp).
  if (!task.module.empty()) return c;
  auto shapes = infer_shapes(task);
  if (!shapes || task.inputs.empty()) return c;
  const std::string out_dtype = task.inputs[0].dtype;
  c.bytes = static_cast<double>(numel(shapes->output()) * dtype_size(out_dtype)) +
            static_cast<double>(numel(task.inputs[0].shape) * dtype_size(task.inputs[0].dtype));
  for (size_t k = 0; k < task.ops.size(); ++k) {
    const shape_t& in = k == 0 ? shapes->input : shapes->after[k - 1];
    const double f = product_flops(task, k, in, shapes->after[k]);
    if (f <= 0) continue;
    bool whole = true;
    for (size_t j = k + 1; j < task.ops.size() && whole; ++j) {
      const op_info* next = find_op(task.ops[j].op);
      whole = next && shape_preserving(next->cls);
    }
    if (whole) c.flops += f;
  }
  return c;
}

double floor_ms(const task_cost& cost, double peak_bytes_per_s, double peak_flops_per_s) {
  double t = 0.0;
  if (peak_bytes_per_s > 0) t = std::max(t, cost.bytes / peak_bytes_per_s);
  if (peak_flops_per_s > 0) t = std::max(t, cost.flops / peak_flops_per_s);
  return 1e3 * t;
}

}  // namespace crucible::kernels
