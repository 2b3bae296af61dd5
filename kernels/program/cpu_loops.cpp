#include "kernels/program/cpu_loops.hpp"

namespace crucible::kernels {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

std::string cpu_loop(bool simd, int unroll, const std::string& var, const std::string& begin,
                     const std::string& end, const std::string& body) {
  const std::string head = "for (int64_t " + var + " = ";
  const std::string tail = "; " + var + " < " + end + "; ++" + var + ") {\n" + body + "}\n";
  if (!simd) {
    std::string pragma = unroll > 1 ? "#pragma GCC unroll " + std::to_string(unroll) + "\n" : "";
    return pragma + head + begin + tail;
  }
  if (unroll <= 1) return "#pragma omp simd\n" + head + begin + tail;
  const std::string block = std::to_string(8 * unroll);
  const std::string b0 = var + "_b";
  return "int64_t " + b0 + " = " + begin + ";\nfor (; " + b0 + " + " + block + " <= " + end + "; " + b0 +
         " += " + block + ") {\n#pragma omp simd\n" + head + b0 + "; " + var + " < " + b0 + " + " + block +
         "; ++" + var + ") {\n" + body + "}\n}\n#pragma omp simd\n" + head + b0 + tail;
}

std::string cpu_reduce(const cpu_reduction& r, int acc, const std::string& var, const std::string& len,
                       const std::string& body) {
  std::string out;
  auto scalar_names = [&](std::string s) {
    for (const auto& [name, init] : r.accs) s = replace_all(s, "$" + name, name);
    return s;
  };
  if (acc <= 1) {
    for (const auto& [name, init] : r.accs) out += "float " + name + " = " + init + ";\n";
    return out + "for (int64_t " + var + " = 0; " + var + " < " + len + "; ++" + var + ") {\n" + body +
           scalar_names(r.update) + "\n}\n";
  }
  const std::string a = std::to_string(acc), b0 = var + "_" + r.accs.front().first;  // unique per reduction
  for (const auto& [name, init] : r.accs)
    out += "float " + name + "_p[" + a + "];\nfor (int l_ = 0; l_ < " + a + "; ++l_) " + name +
           "_p[l_] = " + init + ";\n";
  std::string lane_update = r.update;
  for (const auto& [name, init] : r.accs) lane_update = replace_all(lane_update, "$" + name, name + "_p[l_]");
  out += "int64_t " + b0 + " = 0;\nfor (; " + b0 + " + " + a + " <= " + len + "; " + b0 + " += " + a +
         ") {\n#pragma omp simd\nfor (int l_ = 0; l_ < " + a + "; ++l_) {\nconst int64_t " + var + " = " +
         b0 + " + l_;\n" + body + lane_update + "\n}\n}\n";
  for (const auto& [name, init] : r.accs) out += "float " + name + " = " + name + "_p[0];\n";
  std::string combine = r.combine;
  for (const auto& [name, init] : r.accs) combine = replace_all(combine, "$" + name + "@", name + "_p[l_]");
  out += "if (" + b0 + " > 0)\nfor (int l_ = 1; l_ < " + a + "; ++l_) {\n" + scalar_names(combine) + "\n}\n";
  out += "for (int64_t " + var + " = " + b0 + "; " + var + " < " + len + "; ++" + var + ") {\n" + body +
         scalar_names(r.update) + "\n}\n";
  return out;
}

cpu_reduction sum_reduction(const std::string& name) {
  return {{{name, "0.0f"}}, "$" + name + " += v;", "$" + name + " += $" + name + "@;"};
}

cpu_reduction max_reduction(const std::string& name) {
  return {{{name, "-HUGE_VALF"}},
          "$" + name + " = v > $" + name + " ? v : $" + name + ";",
          "$" + name + " = $" + name + "@ > $" + name + " ? $" + name + "@ : $" + name + ";"};
}

}  // namespace crucible::kernels
