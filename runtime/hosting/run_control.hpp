#pragma once
// The run's answers to control commands, shared by every way an operator reaches a head: the cluster
// gateway (`crucible status` / `crucible scale` over ZeroMQ) and the dashboard's buttons (over HTTP). The
// status merges what the supervisor (roles), the conductor (candidates) and the learner (step, reward) say;
// a scale goes to the supervisor within the command's deadline. Which commands are taken from whom is
// control_policy's, applied by the caller before it comes here.
//
// A run without a cluster endpoint still has a control desk (spawn_control_desk), so the dashboard has one
// path whether or not nodes can join.
#include <functional>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "messages/control.hpp"

namespace crucible::runtime {

/// One report from the parts' reports: candidates from the conductor's, step and reward from the learner's,
/// each role's members from the supervisor's.
status_report merged_status(const std::vector<status_report>& parts);

/// Asks the supervisor, the conductor and the learner; calls `done` with the merged report (parts that do
/// not answer within 2 s are left out).
void collect_run_status(caf::event_based_actor* self, const caf::actor& supervisor,
                        std::function<void(status_report)> done);

/// Scales `c.role` to `c.count` members through the supervisor within control_deadline_s(c), then calls
/// `after` (which answers with the status after it); on failure `done` gets a report whose error says why.
void scale_role(caf::event_based_actor* self, const caf::actor& supervisor, const control& c,
                std::function<void()> after, std::function<void(status_report)> done);

/// An actor for a run without a cluster endpoint that answers (status_atom) -> status_report and
/// (control, address, public_key) -> status_report (status and scale of the head's roles; errors in
/// status_report.error), with the same policy as the gateway.
caf::actor spawn_control_desk(caf::actor_system& sys, caf::actor supervisor);

}  // namespace crucible::runtime
