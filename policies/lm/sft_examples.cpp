#include "policies/lm/sft_examples.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "policies/lm/contrastive_prompt.hpp"
#include "policies/lm/python_source_variants.hpp"
#include "policies/lm/source_variants.hpp"

namespace crucible::policies {
namespace {

std::string speedup_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", s);
  return buf;
}

}  // namespace

std::string sft_answer(const std::vector<exemplar>& shown, const sft_source& kernel, const task_spec& task,
                       const std::string& target) {
  const bool module = !task.module.empty();  // a KernelBench problem: the answer is a Python ModelNew
  std::string a = "## Performance analysis\n";
  if (shown.empty()) {
    a += module
             ? "No earlier answer is shown: the reference module runs each PyTorch operation as a kernel of "
               "its own, each a launch and a full pass over memory, so the plan is to compute what Model "
               "computes in fewer kernels and passes.\n"
             : "No earlier kernel is shown: the reference runs one library call per op, each a full pass "
               "over memory, so the plan is to do the chain's work in as few passes as the ops allow.\n";
  } else {
    std::vector<exemplar> order = shown;
    std::sort(order.begin(), order.end(),
              [](const exemplar& x, const exemplar& y) { return x.speedup > y.speedup; });
    for (size_t i = 0; i < order.size(); ++i) {
      a += "- Kernel " + std::to_string(i + 1) + " runs at " +
           (order[i].speedup > 0 ? speedup_text(order[i].speedup) : std::string("no verified speed")) +
           (order[i].program.empty() ? std::string(".\n") : ", with the plan `" + order[i].program + "`.\n");
    }
    a += "The faster kernels do the same arithmetic in fewer passes over memory; the next step goes further "
         "along that line.\n";
  }
  a += "\n## Algorithm design\n";
  if (!kernel.program.empty())
    a += "Plan: `" + kernel.program + "` (rewrites, fused groups, and each group's strategy and knobs).\n";
  else if (module)
    a += "Plan: ModelNew below, with Model's interface, computing its outputs in fewer kernels.\n";
  else
    a += "Plan: the kernel below, one pass per fused group of ops.\n";
  a += "\n## Code\n```" + std::string(code_fence_language(task, target)) + "\n" + kernel.source +
       (kernel.source.empty() || kernel.source.back() == '\n' ? "" : "\n") + "```\n";
  return a;
}

expected<std::vector<sft_text_example>> build_sft_examples(const std::vector<sft_source>& sources,
                                                           const std::map<std::string, task_spec>& tasks,
                                                           const std::string& target,
                                                           const sft_data_options& options) {
  std::mt19937_64 rng(options.seed);
  std::map<std::string, std::vector<const sft_source*>> by_task;
  std::set<std::pair<std::string, std::string>> seen;  // (task, source): duplicates add nothing
  for (const auto& s : sources)
    if (tasks.count(s.task) && seen.insert({s.task, s.source}).second) by_task[s.task].push_back(&s);
  if (by_task.empty()) return make_error("sft: no correct kernel of the run's tasks in the corpus");
  std::vector<sft_text_example> out;
  auto example = [&](const task_spec& t, std::vector<exemplar> shown, const sft_source& k) {
    sft_text_example e;
    e.prompt_.task = t;
    e.prompt_.target = target;
    e.prompt_.exemplars = shown;
    e.answer = sft_answer(shown, k, t, target);
    e.code = k.source;
    out.push_back(std::move(e));
  };
  for (const auto& [task, list] : by_task) {
    const task_spec& t = tasks.at(task);
    for (const auto* k : list) {
      example(t, {}, *k);
      int i = 0;
      const bool python = std::string(code_fence_language(t, target)) == "python";
      const int n = static_cast<int>(options.variants);
      for (auto& v :
           python ? python_source_variants(k->source, n, rng()) : source_variants(k->source, n, rng())) {
        sft_source copy = *k;
        copy.source = std::move(v);
        example(t, {}, copy);
        ++i;
      }
      // Contrastive: slower kernels of the task, up to two shown, the faster one as the answer.
      std::vector<const sft_source*> slower;
      for (const auto* o : list)
        if (o->speedup < k->speedup && o->source != k->source) slower.push_back(o);
      for (int64_t c = 0; c < options.contrastive && !slower.empty(); ++c) {
        std::shuffle(slower.begin(), slower.end(), rng);
        std::vector<exemplar> shown;
        for (size_t j = 0; j < slower.size() && j < 2; ++j) {
          exemplar e;
          e.program = slower[j]->program;
          e.source = slower[j]->source;
          e.speedup = slower[j]->speedup;
          shown.push_back(std::move(e));
        }
        example(t, shown, *k);
      }
    }
  }
  return out;
}

expected<std::vector<sft_source>> read_sft_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("sft.jsonl: cannot read '" + path + "'");
  std::vector<sft_source> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(n);
    if (j.is_discarded() || !j.is_object()) return make_error(where + ": not a JSON object");
    if (!j.contains("task") || !j["task"].is_string() || !j.contains("code") || !j["code"].is_string())
      return make_error(where + ": expected string fields \"task\" and \"code\"");
    sft_source s;
    s.task = j["task"].get<std::string>();
    s.source = j["code"].get<std::string>();
    if (j.contains("speedup") && j["speedup"].is_number()) s.speedup = j["speedup"].get<double>();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace crucible::policies
