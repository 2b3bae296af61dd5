// GEMV groups (the gemm_rowsum_to_gemv rewrite): out[r] = sum_j L(x W)[r, j] where the linear ops L map
// column j to a_j * z + c_j, computed as out[r] = x[r, :] . u + sum_j c_j with u = W a (K·N work, from the
// inputs on every call), divided by N for a mean; then the elementwise epilogue on the [rows] vector.
//   dot   double accumulation throughout (the reduction order then hardly matters: the precise option)
//   simd  float accumulation with `acc` partial accumulators (vectorizes)
#include "kernels/program/cpu_groups.hpp"
#include "kernels/program/cpu_loops.hpp"
#include "kernels/program/cpu_math.hpp"
#include "kernels/program/cpu_op_code.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

cpu_group_code emit_gemv_group(const cpu_group_ctx& g) {
  const auto& p = g.plan;
  const chain_op& op = g.chain.ops[p.first];
  const int64_t K = g.in_shape().back(), M = numel(g.in_shape()) / K;
  const int64_t N = input_shape(g.task, op.args[0]).back();
  const std::string Ks = std::to_string(K), Ns = std::to_string(N), Ms = std::to_string(M);
  const bool dbl = p.strategy == "dot";
  const std::string T = dbl ? "double" : "float";
  cpu_group_code out;
  // Scratch: a[N] and u[K] in T (a double takes two floats).
  out.scratch_floats = (N + K) * (dbl ? 2 : 1);

  // Column j's affine map a_j * z + c_j, composed from the linear ops in order.
  std::string lin;
  for (const auto& l : op.linear) {
    const std::string arg = l.args.empty() ? "" : "(" + T + ")" + side_name(g.task, l.args[0]) + "[j]";
    auto s = [&](const char* name) { return "(" + T + ")" + float_literal(op_attr(l, name)); };
    if (l.op == "add")
      lin += "cj += " + arg + ";\n";
    else if (l.op == "sub")
      lin += "cj -= " + arg + ";\n";
    else if (l.op == "mul")
      lin += "aj *= " + arg + ";\ncj *= " + arg + ";\n";
    else if (l.op == "mul_scalar")
      lin += "aj *= " + s("s") + ";\ncj *= " + s("s") + ";\n";
    else if (l.op == "add_scalar")
      lin += "cj += " + s("s") + ";\n";
    else {  // _affine
      const std::string a = "(" + T + ")" + float_literal(l.attrs.count("a") ? l.attrs.at("a") : 1.0);
      const std::string b = "(" + T + ")" + float_literal(l.attrs.count("b") ? l.attrs.at("b") : 0.0);
      lin += "aj *= " + a + ";\ncj = cj * " + a + " + " + b + ";\n";
    }
  }
  std::string code = g.signature() + side_input_decls(g.chain, g.task, p.first, p.last);
  code += T + "* __restrict av = (" + T + "*)ws;\n" + T + "* __restrict u = av + " + Ns + ";\n";
  code += T + " csum = 0;\nfor (int64_t j = 0; j < " + Ns + "; ++j) {\n" + T + " aj = 1, cj = 0;\n" + lin +
          "av[j] = aj;\ncsum += cj;\n}\n";
  code += "const float* __restrict w = t" + std::to_string(input_index(g.task, op.args[0])) + ";\n";

  const shape_t& red = g.chain.after[p.first];
  const std::string col = red.size() > 1 ? "r % " + std::to_string(red.back()) : "r";
  const std::string epi =
      p.last > p.first ? ew_statements(g.chain, g.task, p.first + 1, p.last, ew_env{"v", "r", col, g.poly()})
                       : "";
  const std::string fin = attr_of(op, "mean") != 0 ? " / " + Ns : "";
  if (dbl) {
    code += "for (int64_t k = 0; k < " + Ks + "; ++k) {\nconst float* __restrict wk = w + k * " + Ns +
            ";\ndouble s = 0;\nfor (int64_t j = 0; j < " + Ns +
            "; ++j) s += (double)wk[j] * av[j];\nu[k] = s;\n}\n";
    code += "for (int64_t r = 0; r < " + Ms + "; ++r) {\nconst float* __restrict x = in + r * " + Ks +
            ";\ndouble s = 0;\nfor (int64_t k = 0; k < " + Ks +
            "; ++k) s += (double)x[k] * u[k];\nfloat v = (float)((s + csum)" + fin + ");\n" + epi +
            "out[r] = v;\n}\n";
  } else {
    const int acc = g.knob("acc");
    code += "for (int64_t k = 0; k < " + Ks + "; ++k) {\nconst float* __restrict wk = w + k * " + Ns + ";\n" +
            cpu_reduce(sum_reduction("s"), acc, "j", Ns, "float v = wk[j] * av[j];\n") + "u[k] = s;\n}\n";
    code += "for (int64_t r = 0; r < " + Ms + "; ++r) {\nconst float* __restrict x = in + r * " + Ks + ";\n" +
            cpu_reduce(sum_reduction("s"), acc, "k", Ks, "float v = x[k] * u[k];\n") +
            "float v = (s + csum)" + fin + ";\n" + epi + "out[r] = v;\n}\n";
  }
  out.code = code + "}\n";
  return out;
}

}  // namespace crucible::kernels
