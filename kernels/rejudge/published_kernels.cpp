#include "kernels/rejudge/published_kernels.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kernels/python/kernelbench_suite.hpp"

namespace crucible::kernels {

namespace fs = std::filesystem;

namespace {

// CUDA-L1's score fields and the baseline each is against: one table for the reader and the report.
const std::pair<const char*, const char*> claim_fields[] = {
    {"score_default", "eager"},
    {"score_torch_compile_default", "torch.compile"},
    {"score_torch_compile_reduce_overhead", "torch.compile reduce-overhead"},
    {"score_cuda_graph", "cuda graph"},
    {"score_cudnn", "cudnn"},
};

const std::pair<code_feature, const char*> feature_names[] = {
    {code_feature::cuda_kernel, "cuda_kernel"},
    {code_feature::load_inline, "load_inline"},
    {code_feature::triton, "triton"},
    {code_feature::try_except, "try_except"},
};

expected<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return make_error("cannot read " + p.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The problems of a checkout by (level, id).
expected<std::map<std::pair<int, int>, kernelbench_problem>> problems_of(const std::string& root, int level) {
  auto found = scan_kernelbench(root, level);
  if (!found) return found.err();
  std::map<std::pair<int, int>, kernelbench_problem> by_id;
  for (auto& p : *found) by_id[{p.level, p.id}] = p;
  return by_id;
}

}  // namespace

const char* wire_name(code_feature f) {
  for (const auto& [k, name] : feature_names)
    if (k == f) return name;
  return "?";
}

bool code_feature_named(const std::string& name, code_feature* out) {
  for (const auto& [k, n] : feature_names)
    if (name == n) {
      *out = k;
      return true;
    }
  return false;
}

std::vector<code_feature> code_features(const std::string& s) {
  static const std::regex global(R"(__global__)");
  static const std::regex inline_ext(R"(\bload_inline\s*\()");
  static const std::regex triton(R"((^|\n)\s*(import\s+triton|from\s+triton\b)|@triton\.jit)");
  static const std::regex try_block(R"((^|\n)[ \t]*try[ \t]*:)");
  std::vector<code_feature> out;
  if (std::regex_search(s, global)) out.push_back(code_feature::cuda_kernel);
  if (std::regex_search(s, inline_ext)) out.push_back(code_feature::load_inline);
  if (std::regex_search(s, triton)) out.push_back(code_feature::triton);
  if (std::regex_search(s, try_block)) out.push_back(code_feature::try_except);
  return out;
}

double published_kernel::claimed_vs_eager() const {
  for (const auto& [baseline, x] : claimed)
    if (baseline == "eager") return x;
  return 0;
}

expected<std::vector<published_kernel>> read_cuda_l1_jsonl(const std::string& path, int level) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path);
  const std::string file = fs::path(path).filename().string();
  std::vector<published_kernel> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = file + " line " + std::to_string(n);
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return make_error(where + ": not a JSON object");
    auto text = [&](const char* key) -> std::string {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto level_it = j.find("level_id"), id_it = j.find("task_id");
    if (level_it == j.end() || !level_it->is_number_integer() || id_it == j.end() ||
        !id_it->is_number_integer())
      return make_error(where + ": level_id and task_id must be integers");
    published_kernel k;
    k.level = level_it->get<int>();
    k.id = id_it->get<int>();
    if (level != 0 && k.level != level) continue;
    k.name = "kb" + std::to_string(k.level) + "_" + std::to_string(k.id);
    k.origin = where;
    k.problem_source = text("ref_code");
    k.candidate_source = text("custom_code");
    if (k.problem_source.empty()) return make_error(where + ": no ref_code");
    for (const auto& [field, baseline] : claim_fields) {
      auto it = j.find(field);
      if (it != j.end() && it->is_number()) k.claimed.emplace_back(baseline, it->get<double>());
    }
    out.push_back(std::move(k));
  }
  return out;
}

expected<std::vector<published_kernel>> read_solution_folder(const std::string& dir,
                                                             const std::string& kernelbench_root, int level) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(dir + ": not a folder");
  auto problems = problems_of(kernelbench_root, 0);
  if (!problems) return problems.err();
  static const std::regex level_folder(R"(^level(\d)$)"), by_name(R"(^(\d+)_.+\.py$)"),
      run_layout(R"(^level_(\d)_problem_(\d+)(_.*)?\.py$)");
  std::vector<published_kernel> out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string file = it->path().filename().string(), parent = it->path().parent_path().filename();
    std::smatch m, lm;
    int l = 0, id = 0;
    if (std::regex_match(file, m, run_layout)) {
      l = std::stoi(m[1].str());
      id = std::stoi(m[2].str());
    } else if (std::regex_match(parent, lm, level_folder) && std::regex_match(file, m, by_name)) {
      l = std::stoi(lm[1].str());
      id = std::stoi(m[1].str());
    } else {
      continue;
    }
    if (level != 0 && l != level) continue;
    auto p = problems->find({l, id});
    if (p == problems->end())
      return make_error(it->path().string() + ": no problem " + std::to_string(id) + " in level " +
                        std::to_string(l) + " of " + kernelbench_root);
    auto problem = read_text(p->second.path);
    if (!problem) return problem.err();
    auto candidate = read_text(it->path());
    if (!candidate) return candidate.err();
    published_kernel k;
    k.level = l;
    k.id = id;
    k.name = p->second.task_name();
    k.origin = it->path().string();
    k.problem_source = std::move(*problem);
    k.candidate_source = std::move(*candidate);
    out.push_back(std::move(k));
  }
  if (ec) return make_error(dir + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.level != b.level ? a.level < b.level : a.id != b.id ? a.id < b.id : a.origin < b.origin;
  });
  return out;
}

namespace {

// `class Model` up to the next top-level statement, comments dropped and whitespace collapsed.
std::string model_class_text(const std::string& source) {
  std::istringstream in(source);
  std::string out, line;
  bool inside = false;
  while (std::getline(in, line)) {
    const bool top = !line.empty() && !std::isspace(static_cast<unsigned char>(line[0])) && line[0] != '#';
    if (top)
      inside = line.rfind("class Model", 0) == 0 &&
               !std::isalnum(static_cast<unsigned char>(line.size() > 11 ? line[11] : ' '));
    if (!inside) continue;
    line = line.substr(0, line.find('#'));
    for (char c : line) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!out.empty() && out.back() != ' ') out += ' ';
      } else {
        out += c;
      }
    }
    if (!out.empty() && out.back() != ' ') out += ' ';
  }
  return out;
}

}  // namespace

bool same_model_class(const std::string& a, const std::string& b) {
  const std::string x = model_class_text(a);
  return !x.empty() && x == model_class_text(b);
}

expected<std::vector<published_kernel>> self_candidates(const std::string& kernelbench_root, int level) {
  auto problems = scan_kernelbench(kernelbench_root, level);
  if (!problems) return problems.err();
  std::vector<published_kernel> out;
  for (const auto& p : *problems) {
    auto source = read_text(p.path);
    if (!source) return source.err();
    published_kernel k;
    k.level = p.level;
    k.id = p.id;
    k.name = p.task_name();
    k.origin = p.path;
    k.problem_source = *source;
    // The problem's own module, its Model under the name a solution has: the candidate is the reference.
    k.candidate_source = *source + "\n\nModelNew = Model\n";
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace crucible::kernels
