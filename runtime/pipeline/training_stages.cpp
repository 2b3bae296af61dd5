#include "runtime/pipeline/training_stages.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

// In the order they run.
const std::pair<training_stage, const char*> stage_names[] = {
    {training_stage::sft, "sft"},
    {training_stage::self_supervised, "self_supervised"},
    {training_stage::contrastive, "contrastive"},
};

std::string progress_path(const std::string& run_dir) {
  return (fs::path(run_dir) / "stages.json").string();
}

}  // namespace

const char* wire_name(training_stage s) {
  for (const auto& [stage, name] : stage_names)
    if (stage == s) return name;
  return "?";
}

std::optional<training_stage> parse_training_stage(std::string_view name) {
  for (const auto& [stage, n] : stage_names)
    if (name == n) return stage;
  return std::nullopt;
}

expected<std::vector<training_stage>> parse_stage_list(const std::vector<std::string>& names) {
  if (names.empty()) return make_error("stages: expected at least one of sft, self_supervised, contrastive");
  std::vector<training_stage> out;
  for (const auto& n : names) {
    auto s = parse_training_stage(n);
    if (!s)
      return make_error("stages: unknown stage '" + n + "' (expected sft, self_supervised, contrastive)");
    if (std::find(out.begin(), out.end(), *s) != out.end())
      return make_error("stages: '" + n + "' is listed twice");
    if (!out.empty() && static_cast<int>(*s) < static_cast<int>(out.back()))
      return make_error("stages: '" + n + "' must come before '" + wire_name(out.back()) +
                        "' (the order is sft, self_supervised, contrastive)");
    out.push_back(*s);
  }
  return out;
}

bool staged(const std::vector<training_stage>& stages) {
  return stages.size() > 1 || (stages.size() == 1 && stages.front() == training_stage::sft);
}

std::string stage_dir(const std::string& run_dir, training_stage s) {
  return (fs::path(run_dir) / "stages" / wire_name(s)).string();
}

expected<std::vector<training_stage>> load_stages_done(const std::string& run_dir,
                                                       const std::vector<training_stage>& order) {
  std::vector<training_stage> done;
  std::ifstream in(progress_path(run_dir));
  if (!in) return done;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("done") || !j["done"].is_array())
    return make_error(progress_path(run_dir) + ": not a stage progress file ({\"done\": [...]})");
  for (const auto& v : j["done"]) {
    auto s = v.is_string() ? parse_training_stage(v.get<std::string>()) : std::nullopt;
    if (!s || std::find(order.begin(), order.end(), *s) == order.end())
      return make_error(progress_path(run_dir) + ": stage " + v.dump() +
                        " is done but the config's stages do not list it (resume with the run's own config)");
    done.push_back(*s);
  }
  return done;
}

status mark_stage_done(const std::string& run_dir, training_stage s) {
  auto done = load_stages_done(
      run_dir, {training_stage::sft, training_stage::self_supervised, training_stage::contrastive});
  if (!done) return done.err();
  if (std::find(done->begin(), done->end(), s) == done->end()) done->push_back(s);
  nlohmann::json j;
  j["done"] = nlohmann::json::array();
  for (auto d : *done) j["done"].push_back(wire_name(d));
  const std::string path = progress_path(run_dir), tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    if (!out) return make_error("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return make_error("cannot write " + path + ": " + ec.message());
  return {};
}

plateau_watch::plateau_watch(int64_t window, double min_gain)
    : window_(std::max<int64_t>(1, window)), min_gain_(min_gain) {}

bool plateau_watch::add(double correct_rate) {
  rates_.push_back(correct_rate);
  if (static_cast<int64_t>(rates_.size()) < window_) return false;
  double mean = 0;
  for (auto it = rates_.end() - window_; it != rates_.end(); ++it) mean += *it;
  mean /= static_cast<double>(window_);
  if (best_ < 0 || mean > best_ + min_gain_) {
    best_ = mean;
    since_best_ = 0;
    return false;
  }
  return ++since_best_ >= window_;
}

}  // namespace crucible::runtime
