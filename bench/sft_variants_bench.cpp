// The sft stage's Python variants on code written by others: every ModelNew of a CUDA-L1 release
// (custom_code, cuda_graph_code, cudnn_code of each JSON line), or every .py file under a folder, varied as
// the sft stage varies them (policies/lm/python_source_variants), then read back by Python's own parser. A
// variant must parse, have the source's syntax tree once variable names are set aside, and rename
// consistently (one name for one name, both ways). Prints a table; exit 1 when a variant breaks one of those.
//   build/bench/sft_variants_bench h100.json [--per-source 3] [--python /usr/bin/python3]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "policies/lm/python_source_variants.hpp"

namespace fs = std::filesystem;

namespace {

constexpr const char* check_script = R"PY(
import ast, json, sys
data = json.load(open(sys.argv[1]))
class Erase(ast.NodeTransformer):
    def visit_Name(self, n): n.id = "_"; return n
    def visit_Global(self, n): n.names = ["_"] * len(n.names); return n
    def visit_Nonlocal(self, n): n.names = ["_"] * len(n.names); return n
def names(src):
    out = []
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.Name): out.append(n.id)
        if isinstance(n, (ast.Global, ast.Nonlocal)): out += n.names
    return out
def shape(src): return ast.dump(Erase().visit(ast.parse(src)))
s = dict(sources=0, unparsable_sources=0, without_variant=0, variants=0, renamed=0, reindented_only=0,
         syntax_errors=0, structure_changed=0, inconsistent_renames=0)
for d in data:
    try: base, bn = shape(d["src"]), names(d["src"])
    except SyntaxError: s["unparsable_sources"] += 1; continue
    s["sources"] += 1
    s["without_variant"] += not d["variants"]
    for v in d["variants"]:
        s["variants"] += 1
        try: vs, vn = shape(v), names(v)
        except SyntaxError: s["syntax_errors"] += 1; continue
        if vs != base: s["structure_changed"] += 1; continue
        fwd, back = {}, {}
        if not all(fwd.setdefault(a, b) == b and back.setdefault(b, a) == a for a, b in zip(bn, vn)):
            s["inconsistent_renames"] += 1
        elif bn != vn: s["renamed"] += 1
        else: s["reindented_only"] += 1
print(json.dumps(s))
)PY";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, python = "/usr/bin/python3";
  int per_source = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--per-source" && i + 1 < argc)
      per_source = std::atoi(argv[++i]);
    else if (a == "--python" && i + 1 < argc)
      python = argv[++i];
    else
      input = a;
  }
  if (input.empty()) {
    std::cerr << "usage: sft_variants_bench RELEASE.json|FOLDER [--per-source N] [--python PATH]\n";
    return 2;
  }
  std::vector<std::string> sources;
  if (fs::is_directory(input)) {
    for (const auto& e : fs::recursive_directory_iterator(input))
      if (e.is_regular_file() && e.path().extension() == ".py") sources.push_back(read(e.path()));
  } else {
    std::ifstream in(input);
    if (!in) {
      std::cerr << "cannot read " << input << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object()) continue;
      for (const char* k : {"custom_code", "cuda_graph_code", "cudnn_code"})
        if (j.contains(k) && j[k].is_string() && !j[k].get<std::string>().empty()) sources.push_back(j[k]);
    }
  }
  nlohmann::json out = nlohmann::json::array();
  uint64_t seed = 1;
  for (const auto& s : sources)
    out.push_back(
        {{"src", s}, {"variants", crucible::policies::python_source_variants(s, per_source, seed++)}});
  const fs::path dir = fs::temp_directory_path() / ("crucible-sft-variants-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "variants.json") << out.dump();
  std::ofstream(dir / "check.py") << check_script;
  const std::string cmd = python + " " + (dir / "check.py").string() + " " + (dir / "variants.json").string();
  std::string result;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) result += buf;
    ::pclose(p);
  }
  fs::remove_all(dir);
  auto r = nlohmann::json::parse(result, nullptr, false);
  if (!r.is_object()) {
    std::cerr << "the check did not run (" << python << "): " << result << "\n";
    return 2;
  }
  std::printf("| %s | count |\n|---|---|\n", input.c_str());
  for (const char* k : {"sources", "unparsable_sources", "without_variant", "variants", "renamed",
                        "reindented_only", "syntax_errors", "structure_changed", "inconsistent_renames"})
    std::printf("| %s | %lld |\n", k, static_cast<long long>(r[k].get<int64_t>()));
  const bool broken = r["syntax_errors"].get<int64_t>() + r["structure_changed"].get<int64_t>() +
                          r["inconsistent_renames"].get<int64_t>() >
                      0;
  return broken ? 1 : 0;
}
