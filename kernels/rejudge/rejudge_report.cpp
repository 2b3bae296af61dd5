#include "kernels/rejudge/rejudge_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "kernels/eval/timing_stats.hpp"

namespace crucible::kernels {

namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::vector<std::string> feature_names(const std::vector<code_feature>& fs) {
  std::vector<std::string> out;
  for (auto f : fs) out.push_back(wire_name(f));
  return out;
}

std::string summary_line(const char* what, const speedup_summary& s) {
  return std::string("| ") + what + " | " + std::to_string(s.correct) + " of " + std::to_string(s.tasks) +
         " | " + fmt("%.2fx", s.mean) + " | " + fmt("%.2fx", s.median) + " | " + fmt("%.2fx", s.geomean) +
         " | " + fmt("%.2fx", s.mean_all) + " | " + fmt("%.2fx", s.geomean_all) + " | " + format_fast_p(s) +
         " |\n";
}

}  // namespace

const char* wire_name(rejudge_status s) {
  switch (s) {
    case rejudge_status::judged:
      return "judged";
    case rejudge_status::no_candidate:
      return "no_candidate";
    case rejudge_status::problem_error:
      return "problem_error";
  }
  return "?";
}

rejudge_summary summarize_rejudged(const std::vector<rejudged_kernel>& rows) {
  rejudge_summary s;
  s.kernels = rows.size();
  std::vector<std::optional<double>> claimed, verified, vs_graph, vs_compile, vs_compile_ro;
  std::vector<double> aa, seconds;
  for (const auto& r : rows) {
    if (r.status != rejudge_status::no_candidate && r.seconds > 0) seconds.push_back(r.seconds);
    if (r.status != rejudge_status::no_candidate) ++s.with_candidate;
    if (r.status == rejudge_status::judged) ++s.judged;
    ++s.outcomes[r.outcome];
    for (const auto& f : r.flags) ++s.hack_flags[f];
    for (auto f : r.features) ++s.features[wire_name(f)];
    const bool pass = r.status == rejudge_status::judged && r.outcome == "pass" && r.speedup > 0;
    claimed.push_back(r.claimed_vs_eager > 0 ? std::optional<double>(r.claimed_vs_eager) : std::nullopt);
    verified.push_back(pass ? std::optional<double>(r.speedup) : std::nullopt);
    auto other = [&](double x) { return pass && x > 0 ? std::optional<double>(x) : std::nullopt; };
    vs_graph.push_back(other(r.speedup_vs_graph));
    vs_compile.push_back(other(r.speedup_vs_compile));
    vs_compile_ro.push_back(other(r.speedup_vs_compile_ro));
    if (r.claimed_vs_eager > 1) {
      ++s.claimed_wins;
      if (pass && r.speedup > 1) ++s.surviving_wins;
    }
    if (pass) aa.push_back(r.speedup);
  }
  s.claimed = summarize_speedups(claimed);
  s.verified = summarize_speedups(verified);
  s.verified_vs_graph = summarize_speedups(vs_graph);
  s.verified_vs_compile = summarize_speedups(vs_compile);
  s.verified_vs_compile_ro = summarize_speedups(vs_compile_ro);
  if (!aa.empty()) {
    for (double x : aa) {
      s.aa_mean_abs += std::abs(x - 1) / static_cast<double>(aa.size());
      s.aa_max_abs = std::max(s.aa_max_abs, std::abs(x - 1));
    }
    s.aa_sd = cv(aa) * mean(aa);
  }
  if (!seconds.empty()) {
    for (double x : seconds) s.seconds_total += x;
    s.seconds_median = median(seconds);
    s.per_minute = 60.0 * static_cast<double>(seconds.size()) / s.seconds_total;
  }
  return s;
}

std::vector<rejudged_kernel> resumed_rows(const std::vector<rejudged_kernel>& kept,
                                          const std::vector<rejudged_kernel>& judged) {
  std::map<std::pair<int, int>, rejudged_kernel> by_problem;
  for (const auto& r : kept) by_problem[{r.level, r.id}] = r;
  for (const auto& r : judged) by_problem[{r.level, r.id}] = r;
  std::vector<rejudged_kernel> rows;
  rows.reserve(by_problem.size());
  for (auto& [key, r] : by_problem) rows.push_back(std::move(r));
  return rows;
}

expected<std::vector<rejudged_kernel>> read_rejudged_kernels(const std::string& json_text,
                                                             const rejudge_header& h) {
  try {
    const auto j = nlohmann::json::parse(json_text);
    const std::pair<const char*, nlohmann::json> same[] = {
        {"source", h.source}, {"target", h.target}, {"device", h.device}, {"self_check", h.self_check}};
    for (const auto& [key, want] : same)
      if (j.at(key) != want)
        return make_error(std::string("it is another run's report: its ") + key + " is " + j.at(key).dump() +
                          ", this run's " + want.dump());
    std::vector<rejudged_kernel> rows;
    for (const auto& k : j.at("kernels")) {
      rejudged_kernel r;
      r.level = k.at("level").get<int>();
      r.id = k.at("task_id").get<int>();
      r.name = k.at("task").get<std::string>();
      r.origin = k.at("origin").get<std::string>();
      for (const auto& [baseline, x] : k.at("claimed").items())
        r.claimed.emplace_back(baseline, x.get<double>());
      for (const auto& [baseline, x] : r.claimed)
        if (baseline == "eager") r.claimed_vs_eager = x;
      const auto status = k.at("status").get<std::string>();
      bool known = false;
      for (auto st : {rejudge_status::judged, rejudge_status::no_candidate, rejudge_status::problem_error})
        if (status == wire_name(st)) {
          r.status = st;
          known = true;
        }
      if (!known) return make_error("kernel " + r.name + ": unknown status '" + status + "'");
      r.outcome = k.at("outcome").get<std::string>();
      r.speedup = k.at("speedup_vs_eager").get<double>();
      r.speedup_vs_graph = k.at("speedup_vs_graph").get<double>();
      r.speedup_vs_compile = k.at("speedup_vs_compile").get<double>();
      r.speedup_vs_compile_ro = k.at("speedup_vs_compile_reduce_overhead").get<double>();
      r.eager_ms = k.at("eager_ms").get<double>();
      r.candidate_ms = k.at("candidate_ms").get<double>();
      r.graph_ms = k.at("graph_ms").get<double>();
      r.compile_ms = k.at("compile_ms").get<double>();
      r.compile_ro_ms = k.at("compile_reduce_overhead_ms").get<double>();
      r.flags = k.at("flags").get<std::vector<std::string>>();
      for (const auto& name : k.at("code").get<std::vector<std::string>>()) {
        code_feature f;
        if (!code_feature_named(name, &f))
          return make_error("kernel " + r.name + ": unknown code '" + name + "'");
        r.features.push_back(f);
      }
      r.error = k.at("error").get<std::string>();
      r.peak_fraction = k.at("peak_fraction").get<double>();
      r.seconds = k.at("seconds").get<double>();
      r.notes = k.at("notes").get<std::vector<std::string>>();
      rows.push_back(std::move(r));
    }
    return rows;
  } catch (const std::exception& e) {
    return make_error(std::string("not a report of crucible rejudge: ") + e.what());
  }
}

std::string rejudge_json(const rejudge_header& h, const std::vector<rejudged_kernel>& rows,
                         const rejudge_summary& s) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json claimed = nlohmann::json::object();
    for (const auto& [baseline, x] : r.claimed) claimed[baseline] = x;
    kernels.push_back({{"level", r.level},
                       {"task_id", r.id},
                       {"task", r.name},
                       {"origin", r.origin},
                       {"claimed", claimed},
                       {"status", wire_name(r.status)},
                       {"outcome", r.outcome},
                       {"speedup_vs_eager", r.speedup},
                       {"speedup_vs_graph", r.speedup_vs_graph},
                       {"speedup_vs_compile", r.speedup_vs_compile},
                       {"speedup_vs_compile_reduce_overhead", r.speedup_vs_compile_ro},
                       {"eager_ms", r.eager_ms},
                       {"candidate_ms", r.candidate_ms},
                       {"graph_ms", r.graph_ms},
                       {"compile_ms", r.compile_ms},
                       {"compile_reduce_overhead_ms", r.compile_ro_ms},
                       {"flags", r.flags},
                       {"code", feature_names(r.features)},
                       {"error", r.error},
                       {"peak_fraction", r.peak_fraction},
                       {"seconds", r.seconds},
                       {"notes", r.notes}});
  }
  nlohmann::json summary = {
      {"kernels", s.kernels},
      {"with_candidate", s.with_candidate},
      {"judged", s.judged},
      {"outcomes", s.outcomes},
      {"hack_flags", s.hack_flags},
      {"code", s.features},
      {"claimed", speedup_summary_json(s.claimed)},
      {"verified", speedup_summary_json(s.verified)},
      {"verified_vs_graph", speedup_summary_json(s.verified_vs_graph)},
      {"verified_vs_compile", speedup_summary_json(s.verified_vs_compile)},
      {"verified_vs_compile_reduce_overhead", speedup_summary_json(s.verified_vs_compile_ro)},
      {"claimed_wins", s.claimed_wins},
      {"surviving_wins", s.surviving_wins},
      {"seconds", {{"total", s.seconds_total}, {"median", s.seconds_median}, {"per_minute", s.per_minute}}}};
  if (h.self_check)
    summary["aa"] = {
        {"mean_abs_deviation", s.aa_mean_abs}, {"max_abs_deviation", s.aa_max_abs}, {"sd", s.aa_sd}};
  return nlohmann::json{{"source", h.source},
                        {"target", h.target},
                        {"device", h.device},
                        {"self_check", h.self_check},
                        {"planned", std::max(h.planned, rows.size())},
                        {"partial", h.planned > rows.size()},
                        {"summary", summary},
                        {"kernels", kernels}}
      .dump(2);
}

std::string rejudge_markdown(const rejudge_header& h, const std::vector<rejudged_kernel>& rows,
                             const rejudge_summary& s) {
  std::string md =
      h.self_check ? "# A/A: each problem's Model as its own candidate\n\n" : "# Re-judged kernels\n\n";
  if (h.planned > rows.size())
    md += "> partial: " + std::to_string(rows.size()) + " of " + std::to_string(h.planned) +
          " kernels judged so far\n\n";
  md += "Source: `" + h.source + "`. Target: " + h.target + " (" + h.device + ").";
  if (!h.self_check)
    md +=
        " Claimed figures are the publication's, on its own GPU; measured ones are Crucible's protocol on "
        "this target.";
  md += "\n\n";
  md +=
      "| task | claimed vs eager | measured vs eager | verdict | flags | code |\n|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    std::string verdict = r.outcome;
    if (!r.error.empty() && r.outcome != "pass") verdict += ": " + r.error.substr(0, 80);
    md += "| " + r.name + " | " + (r.claimed_vs_eager > 0 ? fmt("%.3fx", r.claimed_vs_eager) : "-") + " | " +
          (r.speedup > 0 ? fmt("%.3fx", r.speedup) : "-") + " | " + verdict + " | " + join(r.flags, ", ") +
          " | " + join(feature_names(r.features), ", ") + " |\n";
  }
  md += "\n## Summary\n\n";
  md += std::to_string(s.kernels) + " kernels, " + std::to_string(s.with_candidate) + " with a candidate, " +
        std::to_string(s.judged) + " judged. Outcomes:";
  for (const auto& [o, n] : s.outcomes) md += " " + o + " " + std::to_string(n) + ";";
  md += "\n\n";
  if (!s.hack_flags.empty()) {
    md += "Hack classes found:";
    for (const auto& [f, n] : s.hack_flags) md += " " + f + " " + std::to_string(n) + ";";
    md += "\n\n";
  }
  if (!s.features.empty()) {
    md += "Code of the candidates:";
    for (const auto& [f, n] : s.features)
      md += " " + f + " " + std::to_string(n) + " of " + std::to_string(s.with_candidate) + ";";
    md += "\n\n";
  }
  md +=
      "| speedup vs eager | tasks with one | mean | median | geomean | mean, 1x where none | geomean, 1x "
      "where "
      "none | fast_p |\n|---|---|---|---|---|---|---|---|\n";
  if (!h.self_check) md += summary_line("claimed", s.claimed);
  md += summary_line("measured (pass only)", s.verified);
  md += "\n";
  // The other baselines, where they were timed: the same figures with each as the denominator's reference.
  const std::pair<const char*, const speedup_summary*> others[] = {
      {"measured vs CUDA graph", &s.verified_vs_graph},
      {"measured vs torch.compile", &s.verified_vs_compile},
      {"measured vs torch.compile reduce-overhead", &s.verified_vs_compile_ro}};
  std::string more;
  for (const auto& [what, sum] : others)
    if (sum->correct > 0) more += summary_line(what, *sum);
  if (!more.empty())
    md +=
        "| speedup vs another baseline | tasks with one | mean | median | geomean | mean, 1x where none | "
        "geomean, 1x where none | fast_p |\n|---|---|---|---|---|---|---|---|\n" +
        more + "\n";
  if (!h.self_check)
    md += std::to_string(s.surviving_wins) + " of " + std::to_string(s.claimed_wins) +
          " claimed wins over eager pass and are measured faster than eager.\n";
  else
    md += "A/A over " + std::to_string(s.verified.correct) + " passing kernels: mean |speedup - 1| " +
          fmt("%.4f", s.aa_mean_abs) + ", largest " + fmt("%.4f", s.aa_max_abs) + ", standard deviation " +
          fmt("%.4f", s.aa_sd) + ".\n";
  if (s.per_minute > 0)
    md += "\nWall time: " + fmt("%.1f", s.seconds_total) + " s, median " + fmt("%.1f", s.seconds_median) +
          " s a kernel, " + fmt("%.2f", s.per_minute) + " evaluations per minute.\n";
  return md;
}

}  // namespace crucible::kernels
