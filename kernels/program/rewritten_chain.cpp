#include "kernels/program/rewritten_chain.hpp"

#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

expected<rewritten_chain> chain_of_task(const task_spec& task) {
  auto shapes = infer_shapes(task);
  if (!shapes) return shapes.err();
  for (const auto& in : task.inputs)
    if (in.dtype != "float32")
      return make_error("task '" + task.name + "': input '" + in.name + "' is " + in.dtype +
                        "; the CPU program space covers float32 tasks only");
  rewritten_chain c;
  c.input = shapes->input;
  c.after = shapes->after;
  for (const auto& op : task.ops) c.ops.push_back(chain_op{op.op, op.args, op.attrs, {}});
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
