#include "policies/lm/answer_parser.hpp"

#include <regex>
#include <vector>

namespace crucible::policies {
namespace {

struct block {
  std::string lang, code;
};

// Fenced blocks: a line starting with ``` (an optional language word), up to the next line of ``` alone.
// An unclosed last block runs to the end (a model stopped by max tokens still said what it meant).
std::vector<block> fenced_blocks(const std::string& text) {
  std::vector<block> out;
  size_t pos = 0;
  bool inside = false;
  block cur;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t lead = line.find_first_not_of(" \t");
    bool fence = lead != std::string::npos && line.compare(lead, 3, "```") == 0;
    if (fence && !inside) {
      inside = true;
      cur = block{};
      cur.lang = line.substr(lead + 3);
      while (!cur.lang.empty() && (cur.lang.back() == ' ' || cur.lang.back() == '\t')) cur.lang.pop_back();
    } else if (fence && inside && line.find_first_not_of(" \t`") == std::string::npos) {
      inside = false;
      out.push_back(cur);
    } else if (inside) {
      cur.code += line + "\n";
    }
    if (end == text.size()) break;
    pos = end + 1;
  }
  if (inside) out.push_back(cur);
  return out;
}

bool code_language(const std::string& lang, answer_form form) {
  if (form == answer_form::kernelbench_module) {
    for (const char* l : {"", "python", "py", "Python", "python3"})
      if (lang == l) return true;
    return false;
  }
  for (const char* l : {"", "cpp", "c++", "cuda", "cu", "c", "cxx", "C++", "CUDA"})
    if (lang == l) return true;
  return false;
}

}  // namespace

answer_form answer_form_of(const task_spec& task) {
  return task.module.empty() ? answer_form::c_abi : answer_form::kernelbench_module;
}

parsed_answer parse_answer(const std::string& answer, answer_form form) {
  parsed_answer r;
  auto blocks = fenced_blocks(answer);
  const block* chosen = nullptr;
  const block* any_code = nullptr;
  const bool module = form == answer_form::kernelbench_module;
  static const std::regex c_entry(R"(\bint\s+crucible_forward\s*\()");
  // A class statement at the start of a line (a module-level class; KernelBench's harness looks it up).
  static const std::regex module_entry(R"((^|\n)class\s+ModelNew\s*[(:])");
  const std::regex& entry = module ? module_entry : c_entry;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (!code_language(it->lang, form)) continue;
    if (!any_code) any_code = &*it;
    if (std::regex_search(it->code, entry)) {
      chosen = &*it;
      break;
    }
  }
  if (!any_code) {
    r.problem = answer_problem::no_code_block;
    r.reason = module ? "the answer has no fenced Python code block"
                      : "the answer has no fenced C++/CUDA code block";
    return r;
  }
  if (!chosen) {
    r.problem = answer_problem::no_entry_point;
    r.code = any_code->code;
    r.reason = module ? "no code block defines class ModelNew at module level"
                      : "no code block defines int crucible_forward(...)";
    return r;
  }
  r.code = chosen->code;
  if (module) return r;
  // C linkage: extern "C" on the definition, or an extern "C" block around it.
  static const std::regex linkage(R"(extern\s+"C"\s*(\{|[^;{]*\bcrucible_forward\s*\())");
  if (!std::regex_search(r.code, linkage)) {
    r.problem = answer_problem::no_c_linkage;
    r.reason = "crucible_forward is not declared extern \"C\" (the loader finds it by its C name)";
  }
  return r;
}

}  // namespace crucible::policies
