#include "kernels/program/rewritten_chain.hpp"

#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

bool cpu_emits_op(std::string_view name) {
  static const char* const ops[] = {
      "relu",       "leaky_relu",  "gelu",       "gelu_tanh", "silu",     "sigmoid",  "tanh",
      "exp",        "abs",         "neg",        "square",    "softplus", "clamp",    "mul_scalar",
      "add_scalar", "add",         "sub",        "mul",       "row_sum",  "row_mean", "row_max",
      "softmax",    "log_softmax", "layer_norm", "rms_norm",  "matmul"};
  for (const char* o : ops)
    if (name == o) return true;
  return false;
}

expected<rewritten_chain> chain_of_task(const task_spec& task, std::string_view target) {
  if (target != "cpu" && target != "cuda")
    return make_error("program space: no emitter for target '" + std::string(target) + "' (have: cpu, cuda)");
  auto shapes = infer_shapes(task);
  if (!shapes) return shapes.err();
  for (const auto& in : task.inputs)
    if (in.dtype != "float32")
      return make_error("task '" + task.name + "': input '" + in.name + "' is " + in.dtype + "; the " +
                        std::string(target) + " program space covers float32 tasks only");
  rewritten_chain c;
  c.input = shapes->input;
  c.after = shapes->after;
  for (size_t i = 0; i < task.ops.size(); ++i) {
    const auto& op = task.ops[i];
    if (target == "cpu") {
      const std::string at = "task '" + task.name + "': ops[" + std::to_string(i) + "] (" + op.op + "): ";
      if (!cpu_emits_op(op.op)) return make_error(at + "the cpu target has no emitter for this op");
      const shape_t& before = i == 0 ? c.input : c.after[i - 1];
      if (is_elementwise(chain_op{op.op, op.args, op.attrs, {}}) && !op.args.empty()) {
        const shape_t s = input_shape(task, op.args[0]);
        if (s != before && s != shape_t{before.back()})
          return make_error(at + "the cpu target broadcasts only a side input of the running shape or a " +
                            "last-dim row vector, got " + shape_str(s));
      }
    }
    c.ops.push_back(chain_op{op.op, op.args, op.attrs, {}, shapes->after[i]});
  }
  return c;
}

shape_t input_shape(const task_spec& task, const std::string& name) {
  int idx = input_index(task, name);
  return idx < 0 ? shape_t{} : task.inputs[idx].shape;
}

chain_op_kind kind_of(const chain_op& op) {
  if (op.op == affine_op) return chain_op_kind::elementwise;
  if (op.op == matmul_rowsum_op) return chain_op_kind::gemv;
  const op_info* info = find_op(op.op);
  if (!info) return chain_op_kind::elementwise;  // unreachable: chains are validated
  // The CUDA-only classes by name, so this file does not depend on the order of op_class.
  const std::string_view cls = to_string(info->cls);
  if (cls == "dim_reduce") return chain_op_kind::dim_reduce;
  if (cls == "scan") return chain_op_kind::scan;
  if (cls == "conv") return chain_op_kind::conv;
  if (cls == "pool") return chain_op_kind::pool;
  if (cls == "channel_norm") return chain_op_kind::channel_norm;
  if (cls == "loss") return chain_op_kind::loss;
  if (cls == "bmm") return chain_op_kind::bmm;
  if (cls == "attention") return chain_op_kind::attention;
  switch (info->cls) {
    case op_class::unary:
    case op_class::scalar:
    case op_class::binary:
      return chain_op_kind::elementwise;
    case op_class::row_reduce:
      return chain_op_kind::row_reduce;
    case op_class::row_norm:
      return chain_op_kind::row_norm;
    case op_class::gemm:
      return chain_op_kind::gemm;
    default:
      break;
  }
  return chain_op_kind::elementwise;
}

void recompute_shapes(rewritten_chain& chain, const task_spec& task) {
  chain.after.clear();
  shape_t v = chain.input;
  for (const auto& op : chain.ops) {
    switch (kind_of(op)) {
      case chain_op_kind::elementwise:
      case chain_op_kind::row_norm:
        break;
      case chain_op_kind::row_reduce:
      case chain_op_kind::gemv:
        v.pop_back();
        break;
      case chain_op_kind::gemm:
        v.back() = input_shape(task, op.args[0]).back();
        break;
      default:  // CUDA-only kinds: never reshaped by a rewrite
        v = op.task_out;
        break;
    }
    chain.after.push_back(v);
  }
}

double attr_of(const chain_op& op, std::string_view name) {
  if (auto it = op.attrs.find(std::string(name)); it != op.attrs.end()) return it->second;
  return op_attr(op_spec{op.op, {}, {}}, name);
}

bool uses_transcendental(const chain_op& op) {
  static const char* const names[] = {"gelu", "gelu_tanh", "silu",    "sigmoid",    "tanh",
                                      "exp",  "softplus",  "softmax", "log_softmax"};
  for (const char* n : names)
    if (op.op == n) return true;
  return false;
}

}  // namespace crucible::kernels
