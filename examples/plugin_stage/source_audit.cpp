// source_audit: an example Crucible plugin (README.md beside it; docs/plugins.md). It registers the role
// `source_audit`, a custom pipeline stage that runs after the verifier and
//   * marks every candidate it sees with evidence: "source_audit: N lines, no forbidden call" (or which);
//   * overrules the verifier where a project rule says so: a candidate that calls a forbidden function is
//     flagged as a hack (flag "forbidden_call", reward = verifier.penalty) even when the verifier passed it.
// The forbidden functions default to a list of calls a kernel has no business making; the plugin's setting
// `forbidden` (plugin_settings.source_audit.forbidden: [name, ...] in the config) replaces the list.
#include <cctype>
#include <string>
#include <vector>

#include "runtime/hosting/plugin_api.hpp"

namespace {

namespace cr = crucible::runtime;

std::vector<std::string> forbidden_calls(const cr::plugin_context& ctx) {
  return ctx.setting_list("forbidden", {"getenv", "setenv", "putenv", "system", "popen", "fork", "vfork",
                                        "execv", "execve", "execvp", "execl", "execlp", "dlopen", "dlsym",
                                        "rand", "srand", "abort", "exit", "_exit"});
}

bool ident_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_';
}

struct finding {
  std::string name;
  int line = 0;
};

// The source's line count and every call of a forbidden name: an identifier followed by '(' outside
// comments, string and character literals. A scan, not a parser: enough for an example, and what it misses
// (macros, function pointers) the built-in verifier's import check still sees.
int scan(const std::string& src, const std::vector<std::string>& forbidden, std::vector<finding>& found) {
  int line = 1;
  size_t i = 0, n = src.size();
  while (i < n) {
    char ch = src[i];
    if (ch == '\n') {
      ++line;
      ++i;
    } else if (ch == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < n && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(src[i] == '*' && src[i + 1] == '/')) line += src[i++] == '\n';
      i += 2;
    } else if (ch == '"' || ch == '\'') {
      for (++i; i < n && src[i] != ch && src[i] != '\n'; ++i)
        if (src[i] == '\\') ++i;
      ++i;
    } else if (ident_char(ch) && (i == 0 || !ident_char(src[i - 1]))) {
      size_t start = i;
      while (i < n && ident_char(src[i])) ++i;
      std::string word = src.substr(start, i - start);
      size_t j = i;
      while (j < n && (src[j] == ' ' || src[j] == '\t')) ++j;
      bool member =
          start >= 1 && (src[start - 1] == '.' || (start >= 2 && src.compare(start - 2, 2, "->") == 0));
      if (j < n && src[j] == '(' && !member)
        for (const auto& f : forbidden)
          if (word == f) found.push_back({word, line});
    } else {
      ++i;
    }
  }
  return n == 0 ? 0 : line - (src.back() == '\n' ? 1 : 0);
}

crucible::scored_candidate audit(crucible::scored_candidate c, const cr::plugin_context& ctx) {
  const std::vector<std::string> forbidden = forbidden_calls(ctx);
  std::vector<finding> found;
  int lines = scan(c.cand.source, forbidden, found);
  auto& v = c.judged;
  if (found.empty()) {
    v.evidence.push_back("source_audit: " + std::to_string(lines) + " lines, no forbidden call");
    return c;
  }
  std::string calls;
  for (const auto& f : found)
    calls += (calls.empty() ? "" : ", ") + f.name + " (line " + std::to_string(f.line) + ")";
  v.evidence.push_back("source_audit: " + std::to_string(lines) + " lines, forbidden calls: " + calls);
  // Only a candidate that ran is re-judged; one that failed earlier (compile_error, crash, ...) keeps its
  // outcome, like the verifier's own order of rules.
  if (v.outcome == "pass" || v.outcome == "incorrect") {
    v.outcome = "hack";
    v.flags.push_back("forbidden_call");
    for (const auto& f : found)
      v.evidence.push_back("forbidden_call: line " + std::to_string(f.line) + ": calls " + f.name);
    v.speedup = 0.0;
    v.reward = ctx.run ? ctx.run->penalty : -1.0;
  }
  return c;
}

void register_roles(cr::plugin_host& host) {
  host.add_stage("source_audit", audit);
}

}  // namespace

CRUCIBLE_PLUGIN(register_roles)
