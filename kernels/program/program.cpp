#include "kernels/program/program.hpp"

#include <cctype>

namespace crucible::kernels {
namespace {

// Names (rewrites, strategies, knob names and values) are identifiers: letters, digits, '_' and '.'
// so that the separators of the text form (',', '|', ' ', '=', '[', ']') never need escaping.
bool is_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool parse_index(std::string_view s, int32_t& out) {
  if (s.empty() || s.size() > 9) return false;
  int32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::string to_text(const program& p) {
  std::string out = "rewrites: ";
  if (p.rewrites.empty()) out += "-";
  for (size_t i = 0; i < p.rewrites.size(); ++i) out += (i ? "," : "") + p.rewrites[i];
  for (const auto& g : p.groups) {
    out += " | [" + std::to_string(g.first);
    if (g.last != g.first) out += "-" + std::to_string(g.last);
    out += "] " + g.strategy;
    for (const auto& [k, v] : g.knobs) out += " " + k + "=" + v;
  }
  return out;
}

expected<program> parse_program(std::string_view text) {
  auto parts = split(text, '|');
  program p;
  std::string_view head = trim(parts[0]);
  constexpr std::string_view prefix = "rewrites:";
  if (head.substr(0, prefix.size()) != prefix)
    return make_error("program text must start with 'rewrites:', got '" + std::string(head.substr(0, 20)) +
                      "'");
  head = trim(head.substr(prefix.size()));
  if (head != "-") {
    for (auto r : split(head, ',')) {
      r = trim(r);
      if (!is_name(r)) return make_error("rewrites: '" + std::string(r) + "' is not a rewrite name");
      p.rewrites.emplace_back(r);
    }
  }
  for (size_t gi = 1; gi < parts.size(); ++gi) {
    const std::string where = "group " + std::to_string(gi - 1);
    auto words = split_words(parts[gi]);
    if (words.size() < 2) return make_error(where + ": expected '[first-last] strategy knob=value ...'");
    std::string_view range = words[0];
    if (range.size() < 3 || range.front() != '[' || range.back() != ']')
      return make_error(where + ": '" + std::string(range) + "' is not an op range like [0-2] or [3]");
    range = range.substr(1, range.size() - 2);
    group_plan g;
    auto dash = range.find('-');
    if (dash == std::string_view::npos) {
      if (!parse_index(range, g.first))
        return make_error(where + ": bad op index '" + std::string(range) + "'");
      g.last = g.first;
    } else if (!parse_index(range.substr(0, dash), g.first) || !parse_index(range.substr(dash + 1), g.last) ||
               g.last <= g.first) {
      return make_error(where + ": bad op range '[" + std::string(range) + "]' (want first < last)");
    }
    if (!is_name(words[1]))
      return make_error(where + ": '" + std::string(words[1]) + "' is not a strategy name");
    g.strategy = std::string(words[1]);
    for (size_t w = 2; w < words.size(); ++w) {
      auto eq = words[w].find('=');
      if (eq == std::string_view::npos)
        return make_error(where + ": knob '" + std::string(words[w]) + "' is not name=value");
      auto k = words[w].substr(0, eq), v = words[w].substr(eq + 1);
      if (!is_name(k) || !is_name(v)) return make_error(where + ": bad knob '" + std::string(words[w]) + "'");
      if (!g.knobs.emplace(std::string(k), std::string(v)).second)
        return make_error(where + ": knob '" + std::string(k) + "' given twice");
    }
    p.groups.push_back(std::move(g));
  }
  return p;
}

}  // namespace crucible::kernels
