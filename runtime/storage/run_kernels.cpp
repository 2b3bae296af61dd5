#include "runtime/storage/run_kernels.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "kernels/eval/evaluate.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "runtime/pipeline/training_stages.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {

namespace fs = std::filesystem;

namespace {

kernels::evaluation evaluation_of(const scored_candidate& c) {
  return {c.cand.target, c.cand, c.compiled, c.bench, c.judged};
}

bool passed(const scored_candidate& c) {
  return kernels::has_outcome(c.judged, kernels::outcome::pass);
}

// Every line of `text` under a two-space indent.
std::string indented(const std::string& text) {
  std::string out;
  size_t from = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    out += "  " + text.substr(from, end - from) + "\n";
    from = end + 1;
  }
  return out;
}

const char* extension_of(const std::string& language) {
  if (language == "cu") return ".cu";
  if (language == "py") return ".py";
  return ".cpp";
}

}  // namespace

expected<std::vector<std::string>> run_databases(const std::string& run_dir) {
  if (!fs::is_directory(run_dir)) return make_error("no run directory '" + run_dir + "'");
  const fs::path own = fs::path(run_dir) / "replay.sqlite";
  if (fs::exists(own)) return std::vector<std::string>{own.string()};
  std::vector<std::string> out;
  for (auto s : {training_stage::sft, training_stage::self_supervised, training_stage::contrastive}) {
    const fs::path stage = stage_dir(run_dir, s);
    const fs::path db = (s == training_stage::sft ? stage / "corpus" : stage) / "replay.sqlite";
    if (fs::exists(db)) out.push_back(db.string());
  }
  if (out.empty()) return make_error("'" + run_dir + "' holds no replay database (replay.sqlite) yet");
  return out;
}

expected<std::vector<scored_candidate>> run_candidates(const std::string& run_dir) {
  auto dbs = run_databases(run_dir);
  if (!dbs) return dbs.err();
  std::vector<scored_candidate> all;
  for (const auto& db : *dbs) {
    auto some = replay_store::read_scored(db);
    if (!some) return some.err();
    for (auto& c : *some) all.push_back(std::move(c));
  }
  return all;
}

std::vector<scored_candidate> best_per_task(const std::vector<scored_candidate>& all) {
  std::map<std::string, const scored_candidate*> best;
  for (const auto& c : all) {
    if (!passed(c)) continue;
    auto& b = best[c.cand.task];
    if (!b || c.judged.speedup > b->judged.speedup) b = &c;
  }
  std::vector<scored_candidate> out;
  for (const auto& [task, c] : best) out.push_back(*c);
  return out;
}

std::string format_candidate(const scored_candidate& c) {
  std::string out = "candidate  " + c.cand.id + " (group " + c.cand.group_id + ", policy version " +
                    std::to_string(c.cand.policy_version) + ", content " + c.cand.content_hash.substr(0, 12) +
                    ")\n";
  out += kernels::evaluation_text(evaluation_of(c), c.cand.task);
  const auto& review = c.judged.review;
  if (!review.finding.empty())
    out += "review     " + review.finding + " (" + review.reviewer + "): " + review.reasoning + "\n";
  if (!c.cand.format_error.empty()) out += "format     " + c.cand.format_error + "\n";
  if (!c.bench.notes.empty()) {
    out += "notes\n";
    for (const auto& n : c.bench.notes) out += "  " + n + "\n";
  }
  if (!c.cand.program.empty()) out += "program\n" + indented(c.cand.program);
  out += "source (" + std::string(extension_of(c.cand.language) + 1) + ")\n" + indented(c.cand.source);
  return out;
}

std::string candidate_sidecar(const scored_candidate& c) {
  using nlohmann::json;
  json j = json::parse(kernels::evaluation_json(evaluation_of(c)));
  j["group_id"] = c.cand.group_id;
  j["policy_version"] = c.cand.policy_version;
  j["language"] = c.cand.language;
  j["program"] = c.cand.program;
  j["reward"] = c.reward;
  j["created_unix"] = c.cand.created_unix;
  j["review"] = {{"finding", c.judged.review.finding},
                 {"reasoning", c.judged.review.reasoning},
                 {"reasons", c.judged.review.reasons},
                 {"reviewer", c.judged.review.reviewer}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string kernel_file_name(const scored_candidate& c) {
  std::string name = c.cand.task.empty() ? "task" : c.cand.task;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '_';
  if (name.front() == '.') name.front() = '_';  // never a hidden file, nor "." or ".."
  return name + extension_of(c.cand.language);
}

expected<std::vector<scored_candidate>> export_best(const std::string& run_dir, const std::string& out_dir) {
  auto all = run_candidates(run_dir);
  if (!all) return all.err();
  auto best = best_per_task(*all);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return make_error("cannot create '" + out_dir + "': " + ec.message());
  for (const auto& c : best) {
    const fs::path source = fs::path(out_dir) / kernel_file_name(c);
    fs::path sidecar = source;
    sidecar.replace_extension(".json");
    std::ofstream code(source, std::ios::binary), facts(sidecar, std::ios::binary);
    code << c.cand.source;
    facts << candidate_sidecar(c) << "\n";
    if (!code || !facts) return make_error("cannot write " + source.string() + " and its sidecar");
  }
  return best;
}

}  // namespace crucible::runtime
