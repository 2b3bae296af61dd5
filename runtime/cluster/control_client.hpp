#pragma once
// The operator's side of the head's endpoint: `crucible status` and `crucible scale` send one `control`
// frame (docs/wire_protocol.md 3.9) and read the head's status_report.
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "messages/control.hpp"
#include "messages/expected.hpp"
#include "runtime/cluster/curve_keys.hpp"

namespace crucible::runtime {

/// Sends `command` to the head at `endpoint` and waits up to `timeout` for its answer. Errors: no answer
/// (a head that is not there, or that refused this client's CURVE key), a malformed answer, or the head's
/// own error (status_report.error).
expected<status_report> send_control(const std::string& endpoint, const control& command,
                                     std::chrono::milliseconds timeout,
                                     const std::optional<curve_client_keys>& curve = std::nullopt);

/// A status_report as a person reads it: the learner's step and reward, totals, the best speedups, roles
/// (members, busy, queued, restarts) and nodes.
std::string format_status(const status_report& r);

/// A status_report as JSON (`crucible status --json`, the dashboard).
nlohmann::json status_json(const status_report& r);

}  // namespace crucible::runtime
