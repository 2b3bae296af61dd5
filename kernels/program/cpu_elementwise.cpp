// Elementwise groups: one loop over the running tensor applying every op of the group per element.
//   loop  a plain loop (GCC's own vectorization choice; libm calls stay scalar), unroll via #pragma GCC
//   unroll simd  #pragma omp simd over __restrict pointers; unroll as blocks of 8*unroll elements
// With a row-vector operand the loop is two-level (rows, then columns) so operands index by column
// without a modulo in the inner loop.
#include "kernels/program/cpu_groups.hpp"
#include "kernels/program/cpu_loops.hpp"
#include "kernels/program/cpu_op_code.hpp"

namespace crucible::kernels {

cpu_group_code emit_elementwise_group(const cpu_group_ctx& g) {
  const auto& p = g.plan;
  const shape_t& s = g.in_shape();
  const int64_t n = numel(s), cols = s.back();
  const bool simd = p.strategy == "simd";
  const int unroll = g.knob("unroll");
  std::string code = g.signature() + side_input_decls(g.chain, g.task, p.first, p.last);
  if (reads_row_vector(g.chain, g.task, p.first, p.last) && n != cols) {
    ew_env env{"v", "r * " + std::to_string(cols) + " + c", "c", g.poly()};
    const std::string body =
        "float v = x[c];\n" + ew_statements(g.chain, g.task, p.first, p.last, env) + "y[c] = v;\n";
    code += "  for (int64_t r = 0; r < " + std::to_string(n / cols) + "; ++r) {\n";
    code += "const float* __restrict x = in + r * " + std::to_string(cols) + ";\n";
    code += "float* __restrict y = out + r * " + std::to_string(cols) + ";\n";
    code += cpu_loop(simd, unroll, "c", "0", std::to_string(cols), body) + "}\n";
  } else {
    ew_env env{"v", "i", "i", g.poly()};
    const std::string body =
        "float v = in[i];\n" + ew_statements(g.chain, g.task, p.first, p.last, env) + "out[i] = v;\n";
    code += cpu_loop(simd, unroll, "i", "0", std::to_string(n), body);
  }
  return {code + "}\n", 0, false, false};
}

}  // namespace crucible::kernels
