#include "policies/lm/source_variants.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <set>

namespace crucible::policies {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A lexed piece: code identifiers may be renamed; strings, chars, comments and preprocessor lines never.
struct piece {
  enum kind_t { code, ident, literal, comment, directive } kind;
  std::string text;
};

std::vector<piece> lex(const std::string& s) {
  std::vector<piece> out;
  auto push = [&](piece::kind_t k, std::string t) {
    if (k == piece::code && !out.empty() && out.back().kind == piece::code)
      out.back().text += t;
    else
      out.push_back({k, std::move(t)});
  };
  size_t i = 0;
  bool line_start = true;
  while (i < s.size()) {
    char c = s[i];
    if (line_start && c == '#') {
      size_t e = i;
      while (e < s.size() && !(s[e] == '\n' && s[e - 1] != '\\')) ++e;
      push(piece::directive, s.substr(i, e - i));
      i = e;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      size_t e = s.find('\n', i);
      if (e == std::string::npos) e = s.size();
      push(piece::comment, s.substr(i, e - i));
      i = e;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      e = e == std::string::npos ? s.size() : e + 2;
      push(piece::comment, s.substr(i, e - i));
      i = e;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t e = i + 1;
      while (e < s.size() && s[e] != c) e += s[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, s.size());
      push(piece::literal, s.substr(i, e - i));
      i = e;
      line_start = false;
      continue;
    }
    if (ident_start(c)) {
      size_t e = i;
      while (e < s.size() && ident_char(s[e])) ++e;
      push(piece::ident, s.substr(i, e - i));
      i = e;
      line_start = false;
      continue;
    }
    push(piece::code, std::string(1, c));
    if (c == '\n')
      line_start = true;
    else if (!std::isspace(static_cast<unsigned char>(c)))
      line_start = false;
    ++i;
  }
  return out;
}

const std::set<std::string>& scalar_types() {
  static const std::set<std::string> t = {"int",    "int64_t", "int32_t",  "float", "double",   "size_t",
                                          "auto",   "bool",    "unsigned", "long",  "uint32_t", "uint64_t",
                                          "__half", "float4",  "float2",   "char",  "short",    "dim3"};
  return t;
}

// The last non-space code character before piece k ('.' or '>' of '->' marks a member access).
char previous_code_char(const std::vector<piece>& p, size_t k) {
  while (k-- > 0) {
    if (p[k].kind == piece::comment) continue;
    if (p[k].kind != piece::code) return 'a';
    for (size_t j = p[k].text.size(); j-- > 0;)
      if (!std::isspace(static_cast<unsigned char>(p[k].text[j]))) return p[k].text[j];
  }
  return '\0';
}

// Names declared in the file as local variables: an identifier after a scalar type (with *, &, const) that
// is followed by '=', ';', ',', ')' or '[' — never a function, a type, a member or an ABI name.
std::set<std::string> declared_locals(const std::vector<piece>& p) {
  static const std::set<std::string> keep = {
      "crucible_forward", "ctx",   "inputs", "outputs", "n_inputs", "n_outputs", "main", "data", "shape",
      "stride",           "dtype", "ndim"};
  std::set<std::string> out;
  for (size_t k = 0; k + 1 < p.size(); ++k) {
    if (p[k].kind != piece::ident || !scalar_types().count(p[k].text)) continue;
    size_t j = k + 1;
    std::string between;
    while (j < p.size() &&
           (p[j].kind == piece::code || (p[j].kind == piece::ident && p[j].text == "const"))) {
      between += p[j].text;
      if (p[j].kind == piece::code && p[j].text.find_first_not_of(" \t*&") != std::string::npos) break;
      ++j;
    }
    if (j >= p.size() || p[j].kind != piece::ident) continue;
    const std::string& name = p[j].text;
    if (keep.count(name) || scalar_types().count(name) || name.size() > 40) continue;
    if (j + 1 < p.size() && p[j + 1].kind == piece::code) {
      const std::string& after = p[j + 1].text;
      size_t f = after.find_first_not_of(" \t");
      if (f != std::string::npos && std::string("=;,)[").find(after[f]) != std::string::npos)
        out.insert(name);
    }
  }
  return out;
}

std::string join(const std::vector<piece>& p) {
  std::string s;
  for (const auto& x : p) s += x.text;
  return s;
}

std::string renamed(const std::string& source, std::mt19937_64& rng) {
  auto p = lex(source);
  auto locals = declared_locals(p);
  if (locals.empty()) return source;
  std::set<std::string> taken;
  for (const auto& x : p)
    if (x.kind == piece::ident) taken.insert(x.text);
  static const char* stems[] = {"v", "t", "acc", "idx", "val", "tmp", "q", "w", "k", "m"};
  std::map<std::string, std::string> to;
  for (const auto& name : locals) {
    if (rng() % 2) continue;  // each variant renames a different subset
    for (int attempt = 0; attempt < 50; ++attempt) {
      std::string cand = std::string(stems[rng() % 10]) + std::to_string(rng() % 100);
      if (!taken.count(cand)) {
        to[name] = cand;
        taken.insert(cand);
        break;
      }
    }
  }
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k].kind != piece::ident) continue;
    auto it = to.find(p[k].text);
    if (it == to.end()) continue;
    char before = previous_code_char(p, k);
    if (before == '.' || before == '>' || before == ':') continue;  // a member or a qualified name
    p[k].text = it->second;
  }
  return join(p);
}

std::string reindented(const std::string& source, int width) {
  std::string out;
  size_t i = 0;
  while (i < source.size()) {
    size_t e = source.find('\n', i);
    if (e == std::string::npos) e = source.size();
    std::string line = source.substr(i, e - i);
    size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos) lead = line.size();
    // The source's own indentation is in steps of 2: keep the depth, change the step.
    out += std::string((lead / 2) * static_cast<size_t>(width) + lead % 2, ' ') + line.substr(lead);
    if (e < source.size()) out += '\n';
    i = e + 1;
  }
  return out;
}

// Top-level blocks: a static helper function is a block whose text starts with "static" (after comments)
// and ends at its closing brace at depth 0.
std::string helpers_reordered(const std::string& source, std::mt19937_64& rng) {
  struct block {
    size_t begin, end;
    std::string name;
  };
  std::vector<block> helpers;
  int depth = 0;
  size_t line_begin = 0;
  auto p = lex(source);
  // Positions of depth-0 "static" lines and their closing braces, from the code pieces only.
  size_t at = 0, start = std::string::npos;
  std::string name;
  for (size_t k = 0; k < p.size(); ++k) {
    const auto& x = p[k];
    if (x.kind == piece::ident && depth == 0 && start == std::string::npos && x.text == "static") {
      start = source.rfind('\n', at == 0 ? 0 : at - 1);
      start = start == std::string::npos ? 0 : start + 1;
      name.clear();
    }
    if (x.kind == piece::ident && start != std::string::npos && depth == 0 && k + 1 < p.size() &&
        p[k + 1].kind == piece::code && p[k + 1].text[0] == '(' && name.empty())
      name = x.text;
    if (x.kind == piece::code)
      for (size_t j = 0; j < x.text.size(); ++j) {
        if (x.text[j] == '{') ++depth;
        if (x.text[j] == '}' && --depth == 0 && start != std::string::npos) {
          size_t end = at + j + 1;
          if (end < source.size() && source[end] == '\n') ++end;
          if (!name.empty()) helpers.push_back({start, end, name});
          start = std::string::npos;
        }
        if (x.text[j] == ';' && depth == 0) start = std::string::npos;
      }
    at += x.text.size();
  }
  (void)line_begin;
  if (helpers.size() < 2) return source;
  // Only helpers that call no other helper may move, and only among adjacent helper blocks.
  for (size_t i = 1; i < helpers.size(); ++i) {
    const auto& a = helpers[i - 1];
    const auto& b = helpers[i];
    std::string between = source.substr(a.end, b.begin - a.end);
    if (between.find_first_not_of(" \n\t") != std::string::npos) continue;
    std::string ta = source.substr(a.begin, a.end - a.begin), tb = source.substr(b.begin, b.end - b.begin);
    auto calls = [](const std::string& body, const std::string& fn) {
      auto q = lex(body);
      for (const auto& x : q)
        if (x.kind == piece::ident && x.text == fn) return true;
      return false;
    };
    if (calls(tb, a.name) || calls(ta, b.name)) continue;
    if (rng() % 2 == 0) continue;
    return source.substr(0, a.begin) + tb + between + ta + source.substr(b.end);
  }
  return source;
}

}  // namespace

std::vector<std::string> source_variants(const std::string& source, int n, uint64_t seed) {
  std::vector<std::string> out;
  std::mt19937_64 rng(seed);
  std::set<std::string> seen = {source};
  for (int attempt = 0; attempt < 8 * n && static_cast<int>(out.size()) < n; ++attempt) {
    std::string v = renamed(source, rng);
    if (rng() % 2) v = reindented(v, rng() % 2 ? 4 : 3);
    v = helpers_reordered(v, rng);
    if (seen.insert(v).second) out.push_back(std::move(v));
  }
  return out;
}

std::string normalized_source(const std::string& source) {
  std::string out;
  bool space = false;
  for (const auto& x : lex(source)) {
    if (x.kind == piece::comment) {
      space = true;
      continue;
    }
    if (x.kind == piece::literal) {  // a string's spaces are its value
      if (space && !out.empty()) out += ' ';
      space = false;
      out += x.text;
      continue;
    }
    for (char c : x.text) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        space = true;
        continue;
      }
      if (space && !out.empty()) out += ' ';
      space = false;
      out += c;
    }
  }
  return out;
}

}  // namespace crucible::policies
