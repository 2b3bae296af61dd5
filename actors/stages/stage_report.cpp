#include "actors/stages/stage_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/content_hash.hpp"
#include "policies/lm/python_source_variants.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::actors {
namespace {

stage_figures figures_of(const std::vector<const scored_candidate*>& cands,
                         const std::set<std::string>& sft) {
  stage_figures f;
  std::map<std::string, double> best;
  for (const auto* c : cands) {
    if (kernels::has_outcome(c->judged, kernels::outcome::abandoned)) continue;
    ++f.candidates;
    f.format_failures += kernels::has_outcome(c->judged, kernels::outcome::format) ? 1 : 0;
    f.compiled += c->compiled.ok ? 1 : 0;
    f.flagged += kernels::has_outcome(c->judged, kernels::outcome::hack) ? 1 : 0;
    if (kernels::has_outcome(c->judged, kernels::outcome::pass)) {
      ++f.correct;
      if (!sft.count(sha256_hex(policies::normalized_code(c->cand.source, c->cand.language == "py"))))
        ++f.novel_correct;
      auto& b = best[c->cand.task];
      b = std::max(b, c->judged.speedup);
    }
  }
  std::vector<double> bests;
  for (const auto& [task, s] : best) {
    bests.push_back(s);
    f.tasks_above_1x += s > 1.0;
  }
  f.tasks = static_cast<int64_t>(bests.size());
  if (!bests.empty()) {
    std::sort(bests.begin(), bests.end());
    double sum = 0;
    for (double b : bests) sum += b;
    f.speedup_mean = sum / static_cast<double>(bests.size());
    const size_t n = bests.size();
    f.speedup_median = n % 2 ? bests[n / 2] : 0.5 * (bests[n / 2 - 1] + bests[n / 2]);
  }
  return f;
}

std::string rate(int64_t k, int64_t n) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld/%lld (%.0f%%)", static_cast<long long>(k), static_cast<long long>(n),
                n > 0 ? 100.0 * static_cast<double>(k) / static_cast<double>(n) : 0.0);
  return buf;
}

std::string line(const char* label, const stage_figures& f) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "  %-14s compiled %s, correct %s, format failures %lld, flagged %lld; tasks faster than eager "
      "%lld of %lld with a correct kernel, best per task mean %.2fx median %.2fx; correct and in no "
      "sft example %s\n",
      label, rate(f.compiled, f.candidates).c_str(), rate(f.correct, f.candidates).c_str(),
      static_cast<long long>(f.format_failures), static_cast<long long>(f.flagged),
      static_cast<long long>(f.tasks_above_1x), static_cast<long long>(f.tasks), f.speedup_mean,
      f.speedup_median, rate(f.novel_correct, f.correct).c_str());
  return buf;
}

nlohmann::json json_of(const stage_figures& f) {
  return {{"candidates", f.candidates},     {"format_failures", f.format_failures},
          {"compiled", f.compiled},         {"correct", f.correct},
          {"flagged", f.flagged},           {"novel_correct", f.novel_correct},
          {"tasks_correct", f.tasks},       {"tasks_above_1x", f.tasks_above_1x},
          {"speedup_mean", f.speedup_mean}, {"speedup_median", f.speedup_median}};
}

}  // namespace

expected<stage_report> measure_stage(const std::string& stage, const std::string& replay_db,
                                     const std::vector<std::string>& sft_hashes) {
  auto cands = runtime::replay_store::read_scored(replay_db);
  if (!cands) return cands.err();
  stage_report r;
  r.stage = stage;
  std::set<std::string> sft(sft_hashes.begin(), sft_hashes.end());
  std::vector<const scored_candidate*> all, first;
  r.first_version = -1;
  for (const auto& c : *cands)
    if (r.first_version < 0 || c.cand.policy_version < r.first_version)
      r.first_version = c.cand.policy_version;
  for (const auto& c : *cands) {
    all.push_back(&c);
    if (c.cand.policy_version == r.first_version) first.push_back(&c);
  }
  r.first_version = std::max<int64_t>(r.first_version, 0);
  r.first = figures_of(first, sft);
  r.all = figures_of(all, sft);
  return r;
}

std::string format_stage_report(const stage_report& r) {
  std::string s = "stage " + r.stage + ":\n";
  s += line(("policy v" + std::to_string(r.first_version)).c_str(), r.first);
  s += line("whole stage", r.all);
  return s;
}

std::string stage_report_json(const stage_report& r) {
  nlohmann::json j = {{"stage", r.stage},
                      {"first_version", r.first_version},
                      {"first_version_figures", json_of(r.first)},
                      {"figures", json_of(r.all)}};
  return j.dump(2);
}

}  // namespace crucible::actors
