#include "policies/lm/python_source_variants.hpp"

#include <cctype>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <set>

#include "policies/lm/source_variants.hpp"

namespace crucible::policies {
namespace {

bool ident_start(char c) {
  // Bytes of UTF-8 sequences belong to identifiers (Python allows non-ASCII names).
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) {
  return ident_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

// A lexed piece. Code is one character a piece, except runs of spaces and numbers, so that a logical line's
// first piece and its indentation are pieces of their own.
struct piece {
  enum kind_t { code, space, newline, ident, literal, comment } kind;
  std::string text;
  bool starts = false;  ///< the first piece of a logical line (a comment-only line's comment too)
  int indent = 0;       ///< that line's indentation, in columns
  int depth = 0;        ///< brackets open before this piece
};

bool string_prefix(const std::string& id) {
  std::string l;
  for (char c : id) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "r" || l == "b" || l == "u" || l == "f" || l == "rb" || l == "br" || l == "fr" || l == "rf";
}

// The end of the string whose opening quote is at q: triple-quoted strings span lines, others end at theirs.
size_t string_end(const std::string& s, size_t q) {
  const char c = s[q];
  const bool triple = q + 2 < s.size() && s[q + 1] == c && s[q + 2] == c;
  size_t i = q + (triple ? 3 : 1);
  while (i < s.size()) {
    if (s[i] == '\\') {
      i += 2;
      continue;
    }
    if (triple && s.compare(i, 3, std::string(3, c)) == 0) return i + 3;
    if (!triple && s[i] == c) return i + 1;
    if (!triple && s[i] == '\n') return i;
    ++i;
  }
  return s.size();
}

std::vector<piece> lex(const std::string& s) {
  std::vector<piece> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    size_t e = i + 1;
    piece::kind_t k = piece::code;
    if (c == '#') {
      e = s.find('\n', i);
      if (e == std::string::npos) e = s.size();
      k = piece::comment;
    } else if (c == '"' || c == '\'') {
      e = string_end(s, i);
      k = piece::literal;
    } else if (c == ' ' || c == '\t') {
      while (e < s.size() && (s[e] == ' ' || s[e] == '\t')) ++e;
      k = piece::space;
    } else if (c == '\n') {
      k = piece::newline;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      // 1e-5, 0x1F, 3.0j: the letters of a number are not names
      while (e < s.size() && (ident_char(s[e]) || s[e] == '.' ||
                              ((s[e] == '+' || s[e] == '-') && (s[e - 1] == 'e' || s[e - 1] == 'E') &&
                               s.compare(i, 2, "0x") != 0 && s.compare(i, 2, "0X") != 0)))
        ++e;
    } else if (ident_start(c)) {
      while (e < s.size() && ident_char(s[e])) ++e;
      k = piece::ident;
      if (e < s.size() && (s[e] == '"' || s[e] == '\'') && string_prefix(s.substr(i, e - i))) {
        e = string_end(s, e);
        k = piece::literal;
      }
    }
    out.push_back({k, s.substr(i, e - i)});
    i = e;
  }
  return out;
}

// Marks each logical line's first piece with its indentation, and each piece with the brackets open before
// it. A newline inside brackets or after a backslash continues the line. `tabs`: an indentation has a tab.
void annotate(std::vector<piece>& p, bool& tabs) {
  int depth = 0, indent = 0;
  bool at_start = true, continued = false;
  tabs = false;
  for (size_t k = 0; k < p.size(); ++k) {
    auto& x = p[k];
    x.depth = depth;
    if (x.kind == piece::newline) {
      if (depth == 0 && !continued) {
        at_start = true;
        indent = 0;
      }
      continued = false;
      continue;
    }
    if (x.kind == piece::space) {
      if (at_start) {
        indent = 0;
        for (char c : x.text) indent += c == '\t' ? 8 : 1;
        if (x.text.find('\t') != std::string::npos) tabs = true;
      }
      continue;
    }
    if (at_start) {
      x.starts = true;
      x.indent = indent;
      at_start = x.kind == piece::comment;  // a comment-only line starts nothing
    }
    if (x.kind != piece::code) continue;
    if (x.text == "(" || x.text == "[" || x.text == "{") ++depth;
    if ((x.text == ")" || x.text == "]" || x.text == "}") && depth > 0) --depth;
    if (x.text == "\\" && k + 1 < p.size() && p[k + 1].kind == piece::newline) continued = true;
  }
}

// The next (or previous) piece that is not a space, a newline or a comment, from k (exclusive); p.size()
// when none. A call's arguments may span lines.
bool blank(const piece& x) {
  return x.kind == piece::space || x.kind == piece::newline || x.kind == piece::comment;
}
size_t next_solid(const std::vector<piece>& p, size_t k) {
  for (++k; k < p.size(); ++k)
    if (!blank(p[k])) return k;
  return p.size();
}
size_t previous_solid(const std::vector<piece>& p, size_t k) {
  while (k-- > 0)
    if (!blank(p[k])) return k;
  return p.size();
}

bool is_code(const std::vector<piece>& p, size_t k, const char* text) {
  return k < p.size() && p[k].kind == piece::code && p[k].text == text;
}
bool is_ident(const std::vector<piece>& p, size_t k, const char* text) {
  return k < p.size() && p[k].kind == piece::ident && p[k].text == text;
}

// A single '=' at k (not '==', and not the second character of '<=', '>=', '!=', '+=' ...).
bool plain_assign(const std::vector<piece>& p, size_t k) {
  return is_code(p, k, "=") && !(k + 1 < p.size() && is_code(p, k + 1, "="));
}

struct names {
  std::vector<std::string> renamable;  ///< in the order they are first bound
  std::set<std::string> all;           ///< every identifier and every word of a string: new names avoid them
};

// Names bound by an assignment or a for loop at a logical line's start, less those Python or the harness
// could reach by another path: parameters, class attributes, function and class names, imported names,
// names any string mentions, the harness's names and dunders. Nothing is renamable in a file that reaches
// variables dynamically.
names renamable_names(const std::vector<piece>& p) {
  static const std::set<std::string> keywords = {
      "False", "None",     "True",  "and",      "as",    "assert",     "async",          "await",    "break",
      "class", "continue", "def",   "del",      "elif",  "else",       "except",         "finally",  "for",
      "from",  "global",   "if",    "import",   "in",    "is",         "lambda",         "nonlocal", "not",
      "or",    "pass",     "raise", "return",   "try",   "while",      "with",           "yield",    "match",
      "case",  "self",     "cls",   "ModelNew", "Model", "get_inputs", "get_init_inputs"};
  static const std::set<std::string> dynamic = {"locals", "globals", "vars", "eval", "exec"};
  static const std::regex word(R"([A-Za-z_][A-Za-z0-9_]*)");
  names out;
  std::set<std::string> banned;
  std::vector<std::string> bound;
  bool reaches_dynamically = false;
  for (const auto& x : p) {
    if (x.kind == piece::ident) {
      out.all.insert(x.text);
      if (dynamic.count(x.text)) reaches_dynamically = true;
    }
    if (x.kind == piece::literal)
      for (std::sregex_iterator it(x.text.begin(), x.text.end(), word), end; it != end; ++it) {
        out.all.insert(it->str());
        banned.insert(it->str());
      }
  }
  struct block {
    int indent;
    bool is_class;
  };
  std::vector<block> blocks;
  for (size_t k = 0; k < p.size(); ++k) {
    const auto& x = p[k];
    // Parameters (def and lambda) are reached by keyword from callers: never renamed.
    if (is_ident(p, k, "lambda")) {
      for (size_t j = k + 1; j < p.size() && !(is_code(p, j, ":") && p[j].depth == x.depth); ++j)
        if (p[j].kind == piece::ident) banned.insert(p[j].text);
    }
    if (!x.starts || x.kind == piece::comment) continue;
    while (!blocks.empty() && blocks.back().indent >= x.indent) blocks.pop_back();
    const bool in_class = !blocks.empty() && blocks.back().is_class;
    size_t first = k;
    if (is_ident(p, k, "async")) first = next_solid(p, k);
    if (is_ident(p, first, "def") || is_ident(p, first, "class")) {
      const bool is_def = p[first].text == "def";
      blocks.push_back({x.indent, !is_def});
      // A function's or class's name: a method is reached as self.NAME too.
      const size_t name = next_solid(p, first);
      if (name < p.size() && p[name].kind == piece::ident) banned.insert(p[name].text);
      size_t open = next_solid(p, name);
      if (is_def && is_code(p, open, "("))
        for (size_t j = open + 1; j < p.size() && p[j].depth > p[open].depth; ++j)
          if (p[j].kind == piece::ident) banned.insert(p[j].text);
      continue;
    }
    if (is_ident(p, k, "import") || is_ident(p, k, "from")) {
      for (size_t j = k; j < p.size() && !(p[j].kind == piece::newline && p[j].depth == 0); ++j)
        if (p[j].kind == piece::ident) banned.insert(p[j].text);
      continue;
    }
    // Targets: NAME [, NAME]* followed by '=' or ':' (annotated), or after `for` up to `in`.
    std::vector<std::string> targets;
    size_t j = k;
    const bool loop = is_ident(p, k, "for");
    if (loop) j = next_solid(p, k);
    bool binds = false;
    while (j < p.size() && p[j].kind == piece::ident && !keywords.count(p[j].text)) {
      targets.push_back(p[j].text);
      size_t after = next_solid(p, j);
      if (is_code(p, after, ",")) {
        j = next_solid(p, after);
        continue;
      }
      binds = loop ? is_ident(p, after, "in")
                   : plain_assign(p, after) || (is_code(p, after, ":") && targets.size() == 1);
      break;
    }
    if (!binds) targets.clear();  // an expression, a call, or a target with parts (a.b, a[i], (a, b))
    for (auto& t : targets) {
      if (in_class) banned.insert(t);  // a class attribute is reached as self.NAME too
      bound.push_back(t);
    }
  }
  if (reaches_dynamically) return out;
  std::set<std::string> seen;
  for (const auto& n : bound)
    if (!banned.count(n) && !keywords.count(n) && n.rfind("__", 0) != 0 && seen.insert(n).second)
      out.renamable.push_back(n);
  return out;
}

// Whether the ident at k is the variable its name binds: not an attribute (after '.') and not a keyword
// argument of a call (NAME= after '(' or ',').
bool is_variable(const std::vector<piece>& p, size_t k) {
  const size_t before = previous_solid(p, k), after = next_solid(p, k);
  if (is_code(p, before, ".")) return false;
  if (p[k].depth > 0 && (is_code(p, before, "(") || is_code(p, before, ",")) && plain_assign(p, after))
    return false;
  return true;
}

std::string renamed(const std::vector<piece>& p, const names& n, std::mt19937_64& rng) {
  static const char* suffixes[] = {"_v", "_t", "_val", "_tmp", "_loc", "_x"};
  std::map<std::string, std::string> to;
  std::set<std::string> taken = n.all;
  for (const auto& name : n.renamable) {
    if (rng() % 2 && !(to.empty() && &name == &n.renamable.back())) continue;  // at least one renamed
    for (int tries = 0; tries < 6; ++tries) {
      std::string fresh = name + suffixes[rng() % 6];
      if (taken.insert(fresh).second) {
        to[name] = fresh;
        break;
      }
    }
  }
  std::string out;
  for (size_t k = 0; k < p.size(); ++k) {
    auto it = p[k].kind == piece::ident ? to.find(p[k].text) : to.end();
    out += it != to.end() && is_variable(p, k) ? it->second : p[k].text;
  }
  return out;
}

// Logical lines re-indented from `unit` columns a level to `step`; continuation lines and strings as written.
std::string reindented(const std::vector<piece>& p, int unit, int step) {
  std::string out;
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k].kind == piece::space && k + 1 < p.size() && p[k + 1].starts && p[k + 1].indent % unit == 0 &&
        (k == 0 || p[k - 1].kind == piece::newline))
      out += std::string(static_cast<size_t>(p[k + 1].indent / unit * step), ' ');
    else
      out += p[k].text;
  }
  return out;
}

}  // namespace

std::vector<std::string> python_source_variants(const std::string& source, int n, uint64_t seed) {
  std::vector<std::string> out;
  auto p = lex(source);
  bool tabs = false;
  annotate(p, tabs);
  const names bound = renamable_names(p);
  int unit = 0;
  for (const auto& x : p)
    if (x.starts && x.kind != piece::comment && x.indent > 0) unit = std::gcd(unit, x.indent);
  const bool can_reindent = !tabs && unit > 0;
  if (bound.renamable.empty() && !can_reindent) return out;
  std::mt19937_64 rng(seed);
  std::set<std::string> seen = {source};
  for (int attempt = 0; attempt < 8 * n && static_cast<int>(out.size()) < n; ++attempt) {
    std::string v = bound.renamable.empty() ? source : renamed(p, bound, rng);
    if (can_reindent && (bound.renamable.empty() || rng() % 2)) {
      static const int steps[] = {2, 3, 4, 8};
      int step = steps[rng() % 4];
      if (step == unit) step = unit == 2 ? 4 : 2;
      auto q = lex(v);
      bool t = false;
      annotate(q, t);
      v = reindented(q, unit, step);
    }
    if (seen.insert(v).second) out.push_back(std::move(v));
  }
  return out;
}

std::string normalized_python_source(const std::string& source) {
  std::string out;
  bool space = false;
  for (const auto& x : lex(source)) {
    if (x.kind == piece::comment || x.kind == piece::space || x.kind == piece::newline) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += x.text;
  }
  return out;
}

std::string normalized_code(const std::string& source, bool python) {
  return python ? normalized_python_source(source) : normalized_source(source);
}

}  // namespace crucible::policies
