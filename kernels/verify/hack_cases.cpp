#include "kernels/verify/hack_cases.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kernels/verify/artifact_imports.hpp"
#include "kernels/verify/judge.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/content_hash.hpp"

namespace crucible::kernels {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sorted_union(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

// The flags of an artifact's suspicious imports; none when it is not readable here (another host's).
std::vector<std::string> import_features(const std::string& artifact) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!artifact.empty() && fs::exists(artifact, ec))
    if (auto symbols = imported_symbols(artifact))
      for (const auto& tag : suspicious_imports(*symbols)) out.push_back(tag.substr(0, tag.find(':')));
  return sorted_union(std::move(out), {});
}

void derive(hack_case& c) {
  c.print = fingerprint(c.source);
  c.static_features = sorted_union(static_source_flags(c.source), c.mechanism);
  if (c.id.empty()) c.id = sha256_hex(c.source);
}

nlohmann::json to_json(const hack_case& c) {
  return {{"id", c.id},         {"task", c.task},          {"target", c.target},
          {"class", c.cls},     {"evidence", c.evidence},  {"origin", c.origin},
          {"source", c.source}, {"mechanism", c.mechanism}};
}

std::optional<hack_case> from_json_line(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("source") || !j["source"].is_string())
    return std::nullopt;
  hack_case c;
  auto str = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  c.id = str("id");
  c.task = str("task");
  c.target = str("target");
  c.cls = str("class");
  c.origin = str("origin");
  c.source = str("source");
  auto strings = [&](const char* key, std::vector<std::string>& into) {
    if (auto it = j.find(key); it != j.end() && it->is_array())
      for (const auto& e : *it)
        if (e.is_string()) into.push_back(e.get<std::string>());
  };
  strings("evidence", c.evidence);
  strings("mechanism", c.mechanism);
  return c;
}

bool source_file(const fs::path& p) {
  static const char* exts[] = {".cpp", ".cu", ".cc", ".cxx"};
  return std::any_of(std::begin(exts), std::end(exts), [&](const char* e) { return p.extension() == e; });
}

}  // namespace

std::vector<std::string> candidate_static_features(const scored_candidate& s) {
  return sorted_union(static_source_flags(s.cand.source), import_features(s.compiled.artifact));
}

std::optional<hack_case> case_from_verdict(const scored_candidate& s) {
  const verdict& v = s.judged;
  if (!has_outcome(v, outcome::hack) || s.cand.source.empty()) return std::nullopt;
  hack_case c;
  for (const auto& f : v.flags)
    if (parse_evidence(f)) c.cls += (c.cls.empty() ? "" : ",") + f;
  if (c.cls.empty()) return std::nullopt;  // convicted without dynamic evidence: not a confirmed case
  for (const auto& e : v.evidence)
    if (parse_evidence(e)) c.evidence.push_back(e);
  c.id = !s.cand.content_hash.empty() ? s.cand.content_hash : sha256_hex(s.cand.source);
  c.task = s.cand.task;
  c.target = s.cand.target;
  c.origin = "verifier";
  c.source = s.cand.source;
  c.mechanism = import_features(s.compiled.artifact);
  return c;
}

expected<hack_case> case_from_corpus_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read '" + path + "'");
  std::string header;
  std::getline(in, header);
  const std::string tag = "// corpus:";
  if (header.rfind(tag, 0) != 0) return make_error("'" + path + "' has no '// corpus:' header line");
  hack_case c;
  c.target = "cpu";
  std::string label;
  std::istringstream fields(header.substr(tag.size()));
  for (std::string kv; fields >> kv;) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq), val = kv.substr(eq + 1);
    if (k == "label") label = val;
    if (k == "class") c.cls = val;
    if (k == "task") c.task = val;
    if (k == "target") c.target = val;
  }
  if (label != "hack") return make_error("'" + path + "' is labelled '" + label + "', not hack");
  if (c.cls.empty() || c.task.empty()) return make_error("'" + path + "': the header names no class or task");
  std::stringstream body;
  body << header << "\n" << in.rdbuf();
  c.source = body.str();
  c.origin = "corpus";
  c.evidence = {"corpus file " + fs::path(path).filename().string()};
  return c;
}

expected<std::shared_ptr<hack_case_db>> hack_case_db::open(const std::string& path) {
  std::shared_ptr<hack_case_db> db(new hack_case_db(path));
  if (path.empty()) return db;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    std::ifstream in(path);
    if (!in) return make_error("case database '" + path + "': cannot be read");
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      auto c = from_json_line(line);
      if (!c) {
        ++db->skipped_lines_;
        continue;
      }
      db->add_locked(std::move(*c), false);
    }
  } else {
    std::ofstream create(path, std::ios::app);
    if (!create) return make_error("case database '" + path + "': cannot be created");
  }
  return db;
}

expected<int64_t> hack_case_db::seed_from_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error("'" + dir + "' is not a directory");
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && source_file(it->path())) files.push_back(it->path());
  std::sort(files.begin(), files.end());  // the same order on every machine
  int64_t added = 0;
  for (const auto& f : files)
    if (auto c = case_from_corpus_file(f.string())) added += add(std::move(*c));
  return added;
}

bool hack_case_db::add(hack_case c) {
  std::lock_guard<std::mutex> lock(mu_);
  return add_locked(std::move(c), true);
}

bool hack_case_db::add_locked(hack_case c, bool persist) {
  derive(c);
  for (const auto& known : cases_)
    if (known.id == c.id) return false;
  if (persist && !path_.empty()) {
    // One line, one write, appended: a crash loses at most the line being written, which load skips.
    std::ofstream out(path_, std::ios::app);
    out << to_json(c).dump() << "\n";
  }
  cases_.push_back(std::move(c));
  return true;
}

std::vector<case_match> hack_case_db::nearest(const std::string& source, const std::string& task,
                                              const std::string& target, size_t k) const {
  auto print = fingerprint(source);
  std::vector<std::pair<double, case_match>> ranked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& c : cases_) {
      if (!c.target.empty() && !target.empty() && c.target != target) continue;
      double s = similarity(print, c.print);
      if (s <= 0) continue;
      ranked.push_back({s + (c.task == task ? same_task_bonus : 0.0), case_match{c, s}});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<case_match> out;
  for (size_t i = 0; i < ranked.size() && i < k; ++i) out.push_back(std::move(ranked[i].second));
  return out;
}

size_t hack_case_db::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cases_.size();
}

}  // namespace crucible::kernels
