#include "runtime/dashboard/prometheus_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace crucible::runtime {
namespace {

std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class exposition {
 public:
  // One family: its header once, then its samples.
  void family(const char* name, const char* type, const char* help) {
    name_ = name;
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(double v, const std::vector<std::pair<const char*, std::string>>& labels = {}) {
    out_ += name_;
    if (!labels.empty()) {
      out_ += "{";
      for (size_t i = 0; i < labels.size(); ++i)
        out_ += std::string(i ? "," : "") + labels[i].first + "=\"" + escaped(labels[i].second) + "\"";
      out_ += "}";
    }
    out_ += " " + number(v) + "\n";
  }
  std::string text() && { return std::move(out_); }

 private:
  std::string out_;
  std::string name_;
};

// Everything the head can refuse from the wire (status_report.rejected), so each series exists from the
// start.
constexpr const char* rejected_reasons[] = {"malformed",       "wrong_version",    "unregistered",
                                            "unexpected_kind", "stale_result",     "refused_registration",
                                            "auth_denied",     "handshake_failed", "inconsistent_result",
                                            "control_refused"};

}  // namespace

double benchmarker_busy(const status_report& r) {
  for (const auto& rs : r.roles)
    if (rs.role == "benchmarker" && rs.actors > 0)  // busy counts requests outstanding, queued ones too
      return std::min(1.0, static_cast<double>(rs.busy) / rs.actors);
  return 0.0;
}

std::string prometheus_text(const run_sample& s) {
  const status_report& r = s.status;
  exposition e;
  e.family("crucible_candidates_total", "counter", "Candidates stored in the replay database, by outcome.");
  for (const auto& [outcome, n] : s.outcomes) e.sample(static_cast<double>(n), {{"outcome", outcome}});
  e.family("crucible_candidates_generated_total", "counter", "Candidates the generators wrote.");
  e.sample(static_cast<double>(r.candidates_generated));
  e.family("crucible_evaluations_total", "counter",
           "Candidates through the pipeline (compiled, measured, judged).");
  e.sample(static_cast<double>(r.candidates_scored));
  e.family("crucible_candidates_in_flight", "gauge", "Candidates generated and not yet scored.");
  e.sample(static_cast<double>(r.candidates_in_flight));
  e.family("crucible_candidates_redispatched_total", "counter",
           "Stage requests sent again after a member or node failed.");
  e.sample(static_cast<double>(r.redispatched));
  e.family("crucible_candidates_abandoned_total", "counter",
           "Candidates cut short by a stop's grace period.");
  e.sample(static_cast<double>(r.candidates_abandoned));
  e.family("crucible_evaluations_per_second", "gauge", "Candidates scored per second since the run began.");
  e.sample(r.candidates_per_s);
  e.family("crucible_actors", "gauge", "Members of each role's pool.");
  for (const auto& rs : r.roles) e.sample(rs.actors, {{"role", rs.role}});
  e.family("crucible_actors_busy", "gauge",
           "Requests outstanding at each role's members (those queued at a member too).");
  for (const auto& rs : r.roles) e.sample(rs.busy, {{"role", rs.role}});
  e.family("crucible_queue_depth", "gauge", "Requests waiting for a member of each role.");
  for (const auto& rs : r.roles) e.sample(static_cast<double>(rs.queued), {{"role", rs.role}});
  e.family("crucible_actor_restarts_total", "counter", "Members the supervisor restarted, by role.");
  for (const auto& rs : r.roles) e.sample(rs.restarts, {{"role", rs.role}});
  e.family("crucible_learner_steps_total", "counter", "Learner steps taken.");
  e.sample(static_cast<double>(r.step));
  e.family("crucible_policy_version", "gauge", "The version of the policy's weights.");
  e.sample(static_cast<double>(r.policy_version));
  e.family("crucible_reward_mean", "gauge", "Mean reward of the last learner step.");
  e.sample(r.reward_mean);
  e.family("crucible_staleness_mean", "gauge",
           "Learner version minus generating version, averaged over groups.");
  e.sample(r.staleness_mean);
  e.family("crucible_speedup_best", "gauge", "Best verified speedup against eager, by task.");
  for (const auto& [task, v] : r.speedup_best) e.sample(v, {{"task", task}});
  e.family(s.cuda ? "crucible_gpu_busy_ratio" : "crucible_benchmarker_busy_ratio", "gauge",
           s.cuda ? "Share of the benchmarker's GPU slots evaluating now."
                  : "Share of the benchmarker's members evaluating now.");
  e.sample(benchmarker_busy(r));
  e.family("crucible_rejected_frames_total", "counter", "What the head refused from the wire, by reason.");
  for (const char* why : rejected_reasons) {
    auto it = r.rejected.find(why);
    e.sample(it == r.rejected.end() ? 0.0 : static_cast<double>(it->second), {{"reason", why}});
  }
  for (const auto& [why, n] : r.rejected) {
    bool known = false;
    for (const char* k : rejected_reasons) known = known || why == k;
    if (!known) e.sample(static_cast<double>(n), {{"reason", why}});
  }
  e.family("crucible_nodes", "gauge", "Nodes registered with the head.");
  e.sample(static_cast<double>(r.nodes.size()));
  e.family("crucible_node_in_flight", "gauge", "Work items a node holds, by node.");
  for (const auto& n : r.nodes) e.sample(n.in_flight, {{"node", n.node_id}, {"host", n.host}});
  e.family("crucible_run_seconds", "gauge", "Seconds since the run began.");
  e.sample(r.wall_s);
  return std::move(e).text();
}

}  // namespace crucible::runtime
