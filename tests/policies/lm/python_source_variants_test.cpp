#include "policies/lm/python_source_variants.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace crucible::policies {
namespace {

namespace fs = std::filesystem;

// A ModelNew with what a renamer or a re-indenter could break: a keyword argument named like a local, a
// parameter, a class attribute, a name an f-string and a buffer name mention, a call and a sum spanning
// lines, a triple-quoted string whose text is its value, a comment with a quote in it.
const char* source = R"py(import torch
import torch.nn as nn
import torch.nn.functional as F

# don't rename what a string mentions
bias_name = "shift"
SCALE = 0.5


def helper(t, dim=1):
    total = t.sum(dim=dim, keepdim=True)
    count = t.shape[dim]
    return total / count


class ModelNew(nn.Module):
    factor = 2.0  # a class attribute: reached as self.factor too

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.register_buffer(bias_name, torch.ones(1))

    def half(self, v):  # a method: reached as self.half, never renamed with the local below
        return v * 0.5

    def forward(self, x):
        half = self.half(x)
        shifted = x - helper(x,
                             dim=1)
        weights = [w for w in (0.25, 0.75)]
        acc = torch.zeros_like(shifted)
        for i, w in enumerate(weights):
            acc = acc + w * shifted * (i + 1)
        out = F.relu(acc) * self.scale * SCALE * self.factor
        label = f"{out.shape}"
        result = out \
            + self.shift
        doc = """kept
    as written"""
        return result + len(doc) * 0 + len(label) * 0 + half * 0
)py";

TEST(PythonSourceVariants, VariantsRenameLocalsAndReindentButKeepWhatPythonReachesByName) {
  auto v = python_source_variants(source, 4, 11);
  ASSERT_GE(v.size(), 2u);
  EXPECT_LE(v.size(), 4u);
  std::set<std::string> distinct(v.begin(), v.end());
  EXPECT_EQ(distinct.size(), v.size());
  bool some_renamed = false, some_reindented = false;
  for (const auto& s : v) {
    EXPECT_NE(s, source);
    for (const char* kept :
         {"def helper(t, dim=1):", "t.sum(dim=dim, keepdim=True)",
          "class ModelNew(nn.Module):", "factor = 2.0", "self.factor",
          "def __init__(self, scale):", "self.scale = scale", "dim=1)", "label", "f\"{out.shape}\"",
          "\"\"\"kept\n    as written\"\"\"", "# don't rename what a string mentions",
          "import torch.nn.functional as F", "def forward(self, x):", "def half(self, v):", "self.half(x)"})
      EXPECT_NE(s.find(kept), std::string::npos) << kept << "\n" << s;
    for (const char* local : {"shifted =", "acc =", "total =", "SCALE =", "bias_name ="})
      if (s.find(local) == std::string::npos) some_renamed = true;
    if (s.find("\n    def forward") == std::string::npos) some_reindented = true;
  }
  EXPECT_TRUE(some_renamed);
  EXPECT_TRUE(some_reindented);
  // Deterministic in the seed.
  EXPECT_EQ(python_source_variants(source, 4, 11), v);
}

TEST(PythonSourceVariants, NothingIsRenamedWhereVariablesAreReachedDynamically) {
  const std::string dynamic = "def f(x):\n    y = x + 1\n    return locals()['y']\n";
  for (const auto& s : python_source_variants(dynamic, 3, 1)) {
    EXPECT_NE(s.find("y = x + 1"), std::string::npos) << s;
    EXPECT_NE(s.find("return locals()['y']"), std::string::npos) << s;
  }
  EXPECT_TRUE(python_source_variants("x = 1\nprint(x)", 0, 1).empty());
  // No local and no indentation: nothing to vary.
  EXPECT_TRUE(python_source_variants("import torch\nprint(torch.ones(1))\n", 3, 1).empty());
}

TEST(PythonSourceVariants, NormalizedSourcesIgnoreCommentsAndLayoutNotStrings) {
  EXPECT_EQ(normalized_python_source("x = 1  # one\ny = 'a  b'\n"),
            normalized_python_source("# header\nx  =  1\n\ny = 'a  b'"));
  EXPECT_NE(normalized_python_source("y = 'a  b'\n"), normalized_python_source("y = 'a b'\n"));
  EXPECT_NE(normalized_python_source("s = '# not a comment'\n"), normalized_python_source("s = ''\n"));
}

// Each variant, run by Python beside the source, computes the same outputs (where python3 has torch).
TEST(PythonSourceVariants, EveryVariantComputesWhatTheSourceComputes) {
#ifdef CRUCIBLE_PYTHON3
  const std::string python = CRUCIBLE_PYTHON3;
#else
  const std::string python = "python3";
#endif
  if (std::system((python + " -c 'import torch' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no " << python << " with torch";
  const fs::path dir = fs::temp_directory_path() / ("crucible-pyvariants-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto variants = python_source_variants(source, 6, 3);
  ASSERT_GE(variants.size(), 3u);
  std::vector<std::string> files = {source};
  files.insert(files.end(), variants.begin(), variants.end());
  for (size_t i = 0; i < files.size(); ++i)
    std::ofstream(dir / ("m" + std::to_string(i) + ".py")) << files[i];
  std::ofstream(dir / "check.py") << R"py(import importlib.util, sys, torch
def run(path):
    spec = importlib.util.spec_from_file_location("m", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    model = m.ModelNew(0.5)
    torch.manual_seed(0)
    return model(torch.randn(4, 8))
want = run(sys.argv[1])
for p in sys.argv[2:]:
    got = run(p)
    print("same" if torch.equal(got, want) else "differs", p)
)py";
  std::string cmd = "cd " + dir.string() + " && " + python + " check.py";
  for (size_t i = 0; i < files.size(); ++i) cmd += " m" + std::to_string(i) + ".py";
  cmd += " 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  size_t same = 0;
  for (size_t pos = out.find("same "); pos != std::string::npos; pos = out.find("same ", pos + 1)) ++same;
  EXPECT_EQ(same, variants.size()) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible::policies
