// Row groups: an elementwise prologue, one row_reduce or row_norm over the last dim, an elementwise
// epilogue, one row at a time.
//   multi_pass  the prologue is materialized (into the output row, or a scratch row for a reduction), each
//               statistic is its own pass over it, and a reduction's epilogue is a separate pass over the
//               [rows] vector: the eager structure, one op after another
//   fused_pass  no materialized prologue: every pass recomputes it from the input; the epilogue is fused
//               into the last pass; write passes are `omp simd`
//   online      softmax/log_softmax: running max and rescaled sum in one pass (2 passes in all);
//               layer_norm: shifted sum and sum of squares in one pass (2 passes in all)
// Knobs: acc partial accumulators per reduction (cpu_loops.hpp), math for exp/tanh/erf/log1p.
#include "kernels/program/cpu_groups.hpp"
#include "kernels/program/cpu_loops.hpp"
#include "kernels/program/cpu_math.hpp"
#include "kernels/program/cpu_op_code.hpp"

namespace crucible::kernels {

cpu_group_code emit_row_group(const cpu_group_ctx& g) {
  const auto& p = g.plan;
  int k = p.first;
  while (is_elementwise(g.chain.ops[k])) ++k;
  const chain_op& op = g.chain.ops[k];
  const std::string C = std::to_string(g.in_shape().back());
  const int64_t rows = numel(g.in_shape()) / g.in_shape().back();
  const std::string R = std::to_string(rows);
  const std::string& st = p.strategy;
  const bool multi = st == "multi_pass", online = st == "online";
  const int acc = g.knob("acc");
  const bool poly = g.poly();
  auto EXP = [&](const std::string& a) { return cpu_math_call("exp", a, poly); };
  const bool has_pro = k > p.first, has_epi = k < p.last;
  const std::string pro =
      has_pro ? ew_statements(g.chain, g.task, p.first, k - 1, ew_env{"v", "r * " + C + " + c", "c", poly})
              : "";
  const std::string P = "float v = x[c];\n" + pro;  // the prologued element c of row r
  auto pass = [&](const std::string& body) { return cpu_loop(!multi, 1, "c", "0", C, body); };
  auto reduce = [&](const cpu_reduction& r, const std::string& body) {
    return cpu_reduce(r, acc, "c", C, body);
  };

  std::string code = g.signature() + side_input_decls(g.chain, g.task, p.first, p.last);
  cpu_group_code out;
  code += "  for (int64_t r = 0; r < " + R + "; ++r) {\nconst float* __restrict x = in + r * " + C + ";\n";

  if (kind_of(op) == chain_op_kind::row_reduce) {
    const shape_t& red = g.chain.after[k];
    const std::string col = red.size() > 1 ? "r % " + std::to_string(red.back()) : "r";
    const std::string epi =
        has_epi ? ew_statements(g.chain, g.task, k + 1, p.last, ew_env{"v", "r", col, poly}) : "";
    const bool max = op.op == "row_max";
    const cpu_reduction rr = max ? max_reduction("red") : sum_reduction("red");
    const std::string fin = op.op == "row_mean" ? "red / (float)" + C : "red";
    if (multi) {
      std::string src = "x";
      if (has_pro) {
        code += "float* __restrict tr = ws;\n" + pass(P + "tr[c] = v;\n");
        src = "tr";
        out.scratch_floats = g.in_shape().back();
      }
      code += reduce(rr, "float v = " + src + "[c];\n") + "out[r] = " + fin + ";\n}\n";
      if (has_epi)
        code += "for (int64_t r = 0; r < " + R + "; ++r) {\nfloat v = out[r];\n" + epi + "out[r] = v;\n}\n";
    } else {
      code += reduce(rr, P) + "float v = " + fin + ";\n" + epi + "out[r] = v;\n}\n";
    }
    out.code = code + "}\n";
    return out;
  }

  const std::string epi =
      has_epi ? ew_statements(g.chain, g.task, k + 1, p.last, ew_env{"v", "r * " + C + " + c", "c", poly})
              : "";
  const std::string store = epi + "y[c] = v;\n";
  code += "float* __restrict y = out + r * " + C + ";\n";
  // multi_pass materializes the prologue in y; `src` then holds the prologued row.
  std::string src = "x";
  if (multi && has_pro) {
    code += pass(P + "y[c] = v;\n");
    src = "y";
  }
  const std::string S = multi ? "float v = " + src + "[c];\n" : P;  // prologued element, either way
  const std::string eps = float_literal(attr_of(op, "eps"));
  if (op.op == "softmax" || op.op == "log_softmax") {
    const bool log = op.op == "log_softmax";
    if (online) {
      cpu_reduction ms{
          {{"mx", "-HUGE_VALF"}, {"sm", "0.0f"}},
          // One exp per element: e = exp(-|v - max|) rescales either the sum (a new max) or the element.
          "{ const float d = v - $mx; const float nd = -d; const float e = " + EXP("d < 0.0f ? d : nd") +
              "; const float a = $sm * e + 1.0f, b = $sm + e; $sm = d > 0.0f ? a : b; $mx = d > 0.0f "
              "? v : $mx; }",
          "{ const float mn = $mx@ > $mx ? $mx@ : $mx; $sm = $sm * std::exp($mx - mn) + $sm@ * "
          "std::exp($mx@ - mn); $mx = mn; }"};
      code += reduce(ms, P);
    } else {
      code += reduce(max_reduction("mx"), S);
      const std::string e = "v = " + EXP("v - mx") + ";\n" + (log ? "" : "y[c] = v;\n");
      code += reduce(sum_reduction("sm"), S + e);
    }
    if (log) {
      code += "const float lse = mx + std::log(sm);\n" + pass(S + "v = v - lse;\n" + store);
    } else if (online) {
      code += "const float inv = 1.0f / sm;\n" + pass(P + "v = " + EXP("v - mx") + " * inv;\n" + store);
    } else {
      code += "const float inv = 1.0f / sm;\n" + pass("float v = y[c] * inv;\n" + store);
    }
  } else if (op.op == "layer_norm") {
    std::string aff;
    if (op.args.size() > 0) aff += " * " + side_name(g.task, op.args[0]) + "[c]";
    if (op.args.size() > 1) aff += " + " + side_name(g.task, op.args[1]) + "[c]";
    if (online) {
      code += "float sh;\n{\nconst int64_t c = 0;\n" + P + "sh = v;\n}\n";
      code +=
          reduce({{{"sa", "0.0f"}, {"sq", "0.0f"}}, "$sa += v; $sq += v * v;", "$sa += $sa@; $sq += $sq@;"},
                 P + "v = v - sh;\n");
      code += "const float dm = sa / (float)" + C + ", mean = sh + dm;\nfloat var = sq / (float)" + C +
              " - dm * dm;\nvar = var > 0.0f ? var : 0.0f;\n";
    } else {
      code += reduce(sum_reduction("sa"), S) + "const float mean = sa / (float)" + C + ";\n";
      code += reduce(sum_reduction("sq"), S + "v = v - mean;\nv = v * v;\n") +
              "const float var = sq / (float)" + C + ";\n";
    }
    code += "const float rstd = 1.0f / std::sqrt(var + " + eps + ");\n";
    code += pass(S + "v = (v - mean) * rstd" + aff + ";\n" + store);
  } else {  // rms_norm
    std::string aff = op.args.empty() ? "" : " * " + side_name(g.task, op.args[0]) + "[c]";
    code += reduce(sum_reduction("sq"), S + "v = v * v;\n");
    code += "const float rstd = 1.0f / std::sqrt(sq / (float)" + C + " + " + eps + ");\n";
    code += pass(S + "v = v * rstd" + aff + ";\n" + store);
  }
  out.code = code + "}\n}\n";
  return out;
}

}  // namespace crucible::kernels
