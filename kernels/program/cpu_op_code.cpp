#include "kernels/program/cpu_op_code.hpp"

#include <set>

#include "kernels/program/cpu_math.hpp"

namespace crucible::kernels {
namespace {

// The index a binary op's operand is read at: the flat index when it has the running shape, the column
// when it is a row vector broadcast over the leading dims.
std::string operand(const task_spec& task, const std::string& name, const shape_t& running,
                    const ew_env& env) {
  const bool full = input_shape(task, name) == running;
  return side_name(task, name) + "[" + (full ? env.flat : env.col) + "]";
}

std::string statement(const chain_op& op, const task_spec& task, const shape_t& running, const ew_env& env) {
  const std::string& v = env.var;
  const bool poly = env.poly;
  auto lit = [&](const char* attr) { return float_literal(attr_of(op, attr)); };
  const std::string& o = op.op;
  if (o == "relu") return v + " = " + v + " < 0.0f ? 0.0f : " + v + ";";
  // Selects choose between values computed before them, so the loop if-converts and vectorizes.
  if (o == "leaky_relu")
    return "{\nconst float n_ = " + lit("alpha") + " * " + v + ";\n" + v + " = " + v + " > 0.0f ? " + v +
           " : n_;\n}";
  if (o == "gelu") {
    std::string e =
        v + " * 0.5f * (1.0f + " + cpu_math_call("erf", v + " * 0.70710678118654752f", poly) + ")";
    // Below -5.5, gelu is > -1.1e-7; cru_erf's error near -1 would be scaled by |x| there.
    if (poly) return "{\nconst float g_ = " + e + ";\n" + v + " = " + v + " < -5.5f ? 0.0f : g_;\n}";
    return v + " = " + e + ";";
  }
  if (o == "gelu_tanh")
    return v + " = 0.5f * " + v + " * (1.0f + " +
           cpu_math_call("tanh",
                         "0.79788456080286536f * (" + v + " + 0.044715f * " + v + " * " + v + " * " + v + ")",
                         poly) +
           ");";
  if (o == "silu") return v + " = " + v + " / (1.0f + " + cpu_math_call("exp", "-" + v, poly) + ");";
  if (o == "sigmoid") return v + " = 1.0f / (1.0f + " + cpu_math_call("exp", "-" + v, poly) + ");";
  if (o == "tanh") return v + " = " + cpu_math_call("tanh", v, poly) + ";";
  if (o == "exp") return v + " = " + cpu_math_call("exp", v, poly) + ";";
  if (o == "abs") return v + " = std::fabs(" + v + ");";
  if (o == "neg") return v + " = -" + v + ";";
  if (o == "square") return v + " = " + v + " * " + v + ";";
  if (o == "softplus") {
    if (poly) return v + " = cru_softplus(" + v + ");";
    return "{\nconst float s_ = std::log1p(std::exp(" + v + "));\n" + v + " = " + v + " > 20.0f ? " + v +
           " : s_;\n}";
  }
  if (o == "clamp")
    return v + " = " + v + " < " + lit("lo") + " ? " + lit("lo") + " : (" + v + " > " + lit("hi") + " ? " +
           lit("hi") + " : " + v + ");";
  if (o == "mul_scalar") return v + " = " + v + " * " + lit("s") + ";";
  if (o == "add_scalar") return v + " = " + v + " + " + lit("s") + ";";
  if (o == affine_op) return v + " = " + v + " * " + lit("a") + " + " + lit("b") + ";";
  if (o == "add") return v + " = " + v + " + " + operand(task, op.args[0], running, env) + ";";
  if (o == "sub") return v + " = " + v + " - " + operand(task, op.args[0], running, env) + ";";
  if (o == "mul") return v + " = " + v + " * " + operand(task, op.args[0], running, env) + ";";
  return "#error unknown elementwise op " + o;  // unreachable: chains are validated
}

}  // namespace

std::string side_name(const task_spec& task, const std::string& input_name) {
  return "t" + std::to_string(input_index(task, input_name));
}

std::string ew_statements(const rewritten_chain& chain, const task_spec& task, int first, int last,
                          const ew_env& env) {
  std::string out;
  for (int i = first; i <= last; ++i) out += statement(chain.ops[i], task, chain.before(i), env) + "\n";
  return out;
}

bool reads_row_vector(const rewritten_chain& chain, const task_spec& task, int first, int last) {
  for (int i = first; i <= last; ++i) {
    const auto& op = chain.ops[i];
    if (is_elementwise(op) && !op.args.empty() && input_shape(task, op.args[0]) != chain.before(i))
      return true;
  }
  return false;
}

std::string side_input_decls(const rewritten_chain& chain, const task_spec& task, int first, int last) {
  std::set<int> used;
  for (int i = first; i <= last; ++i) {
    for (const auto& a : chain.ops[i].args) used.insert(input_index(task, a));
    for (const auto& l : chain.ops[i].linear)
      for (const auto& a : l.args) used.insert(input_index(task, a));
  }
  std::string out;
  for (int k : used)
    out += "  const float* __restrict t" + std::to_string(k) + " = X[" + std::to_string(k) + "];\n";
  return out;
}

}  // namespace crucible::kernels
