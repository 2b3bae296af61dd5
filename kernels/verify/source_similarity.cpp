#include "kernels/verify/source_similarity.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "kernels/verify/source_text.hpp"

namespace crucible::kernels {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Words whose change changes the program's structure, so they stay as written.
bool keyword(const std::string& w) {
  static const std::set<std::string> words = {"alignas",
                                              "alignof",
                                              "asm",
                                              "auto",
                                              "bool",
                                              "break",
                                              "case",
                                              "catch",
                                              "char",
                                              "class",
                                              "const",
                                              "constexpr",
                                              "const_cast",
                                              "continue",
                                              "decltype",
                                              "default",
                                              "delete",
                                              "do",
                                              "double",
                                              "dynamic_cast",
                                              "else",
                                              "enum",
                                              "extern",
                                              "false",
                                              "float",
                                              "for",
                                              "friend",
                                              "goto",
                                              "if",
                                              "inline",
                                              "int",
                                              "long",
                                              "mutable",
                                              "namespace",
                                              "new",
                                              "noexcept",
                                              "nullptr",
                                              "operator",
                                              "private",
                                              "protected",
                                              "public",
                                              "register",
                                              "reinterpret_cast",
                                              "return",
                                              "short",
                                              "signed",
                                              "sizeof",
                                              "static",
                                              "static_assert",
                                              "static_cast",
                                              "struct",
                                              "switch",
                                              "template",
                                              "this",
                                              "thread_local",
                                              "throw",
                                              "true",
                                              "try",
                                              "typedef",
                                              "typename",
                                              "union",
                                              "unsigned",
                                              "using",
                                              "virtual",
                                              "void",
                                              "volatile",
                                              "while",
                                              "__asm__",
                                              "__global__",
                                              "__device__",
                                              "__host__",
                                              "__shared__",
                                              "__constant__",
                                              "__managed__",
                                              "__restrict__",
                                              "__syncthreads"};
  return words.count(w) == 1;
}

// FNV-1a over the tokens of one shingle: stable across runs and builds (the hash is never stored, but a
// stable one keeps similarities reproducible in tests and reports).
uint64_t hash_shingle(const std::vector<std::string>& tokens, size_t begin, size_t end) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = begin; i < end; ++i) {
    for (char c : tokens[i]) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    h ^= 0x1f;  // a separator, so "ab c" and "a bc" differ
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::vector<std::string> normalized_tokens(const std::string& source) {
  const std::string code = strip_source(source).code;
  std::vector<std::string> out;
  bool line_start = true, preprocessor = false;
  for (size_t i = 0; i < code.size();) {
    char c = code[i];
    if (c == '\n') {
      if (!(i > 0 && code[i - 1] == '\\')) preprocessor = false;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (line_start && c == '#') preprocessor = true;
    line_start = false;
    if (ident_start(c)) {
      size_t b = i;
      while (i < code.size() && ident_char(code[i])) ++i;
      std::string w = code.substr(b, i - b);
      size_t after = code.find_first_not_of(" \t", i);
      bool qualified = (after != std::string::npos && code.compare(after, 2, "::") == 0) ||
                       (!out.empty() && out.back() == "::");
      out.push_back(preprocessor || qualified || keyword(w) ? w : "$");
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < code.size() && std::isdigit(static_cast<unsigned char>(code[i + 1])))) {
      // A number with its suffix, exponent and digit separators ("1.5e-3f", "0x1p4", "1'000").
      ++i;
      while (i < code.size() && (ident_char(code[i]) || code[i] == '.' || code[i] == '\'' ||
                                 ((code[i] == '-' || code[i] == '+') && std::strchr("eEpP", code[i - 1]))))
        ++i;
      out.push_back("#");
    } else if (c == '"' || c == '\'') {
      // strip_source blanked the literal's contents: skip to its closing quote.
      size_t close = code.find(c, i + 1);
      i = close == std::string::npos ? code.size() : close + 1;
      out.push_back(std::string(1, c));
    } else if (c == ':' && i + 1 < code.size() && code[i + 1] == ':') {
      out.push_back("::");
      i += 2;
    } else {
      // Punctuation: the two-character operators as one token, so "a->b" and "a - > b" differ.
      static const char* pairs[] = {"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
                                    "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="};
      std::string tok(1, c);
      for (const char* p : pairs)
        if (code.compare(i, 2, p) == 0) tok = p;
      out.push_back(tok);
      i += tok.size();
    }
  }
  return out;
}

source_fingerprint fingerprint(const std::string& source) {
  auto tokens = normalized_tokens(source);
  source_fingerprint f;
  f.tokens = tokens.size();
  if (tokens.empty()) return f;
  if (tokens.size() < shingle_size) {
    f.shingles.push_back(hash_shingle(tokens, 0, tokens.size()));
    return f;
  }
  f.shingles.reserve(tokens.size() - shingle_size + 1);
  for (size_t i = 0; i + shingle_size <= tokens.size(); ++i)
    f.shingles.push_back(hash_shingle(tokens, i, i + shingle_size));
  std::sort(f.shingles.begin(), f.shingles.end());
  f.shingles.erase(std::unique(f.shingles.begin(), f.shingles.end()), f.shingles.end());
  return f;
}

double similarity(const source_fingerprint& a, const source_fingerprint& b) {
  if (a.shingles.empty() || b.shingles.empty()) return 0.0;
  size_t common = 0, i = 0, j = 0;
  while (i < a.shingles.size() && j < b.shingles.size()) {
    if (a.shingles[i] == b.shingles[j]) {
      ++common, ++i, ++j;
    } else if (a.shingles[i] < b.shingles[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  size_t all = a.shingles.size() + b.shingles.size() - common;
  return static_cast<double>(common) / static_cast<double>(all);
}

}  // namespace crucible::kernels
