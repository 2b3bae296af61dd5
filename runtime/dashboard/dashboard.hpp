#pragma once
// The head's dashboard: an HTTP server (dashboard.listen, loopback by default) with the live page, the JSON
// it reads, a server-sent event stream of changes, and Prometheus /metrics. One sampler thread asks the
// run for its status, follows metrics.jsonl and glances at the replay database every dashboard.refresh_s,
// whatever the number of clients. The page's scale buttons take the same control path as `crucible scale`
// (control_policy), need the run's token, and are there only when dashboard.controls allows.
//
// Routes: GET / (the page), /assets/NAME, /api/state, /api/events (text/event-stream), /metrics;
// POST /api/scale {"role": R, "count": N} with the token in X-Crucible-Token.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "messages/control.hpp"
#include "messages/expected.hpp"
#include "runtime/cluster/control_policy.hpp"

namespace crucible::runtime {

struct dashboard_sources {
  std::function<expected<status_report>()> status;  ///< the run's status now, as `crucible status` shows it
  /// Carries out a control command from `origin` (the head's control path); errors in status_report.error.
  std::function<status_report(const control&, const control_origin&)> control;
};

struct dashboard_options {
  std::string listen = "127.0.0.1:0";
  bool any_port_if_taken = false;  ///< the configured port is only a default: take another when it is busy
  bool controls = false;           ///< the page may scale roles
  std::string token;               ///< what a command must carry (X-Crucible-Token)
  std::string run_dir;
  bool cuda = false;
  std::vector<std::string> scalable_roles;  ///< the buttons' roles
  std::chrono::milliseconds refresh{1000};
};

class dashboard {
 public:
  /// Starts serving and sampling. Errors: the address cannot be bound.
  static expected<std::unique_ptr<dashboard>> start(dashboard_options options, dashboard_sources sources);
  ~dashboard();
  dashboard(const dashboard&) = delete;
  dashboard& operator=(const dashboard&) = delete;

  /// http://HOST:PORT/ and, with controls, #token=... (the page reads it; it never reaches a server log).
  std::string url() const;
  /// Why the port is not the configured one (empty when it is).
  const std::string& note() const;

  struct impl;

 private:
  explicit dashboard(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

/// A fresh random token (32 hex digits) for dashboard commands.
std::string make_dashboard_token();

}  // namespace crucible::runtime
