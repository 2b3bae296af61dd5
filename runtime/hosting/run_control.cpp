#include "runtime/hosting/run_control.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/cluster/control_policy.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::runtime {

using namespace std::chrono_literals;

status_report merged_status(const std::vector<status_report>& parts) {
  status_report out;
  for (const auto& p : parts) {
    if (p.candidates_generated || p.candidates_scored) {  // the conductor's
      out.candidates_generated = p.candidates_generated;
      out.candidates_scored = p.candidates_scored;
      out.candidates_in_flight = p.candidates_in_flight;
      out.candidates_abandoned = p.candidates_abandoned;
      out.redispatched = p.redispatched;
      out.candidates_per_s = p.candidates_per_s;
      out.speedup_best = p.speedup_best;
      out.wall_s = p.wall_s;
    }
    if (p.step || p.policy_version) {  // the learner's
      out.step = p.step;
      out.policy_version = p.policy_version;
      out.reward_mean = p.reward_mean;
      out.staleness_mean = p.staleness_mean;
    }
    for (const auto& r : p.roles) {
      auto it = std::find_if(out.roles.begin(), out.roles.end(),
                             [&](const role_status& x) { return x.role == r.role; });
      if (it == out.roles.end()) {
        out.roles.push_back(r);
        continue;
      }
      it->actors = std::max(it->actors, r.actors);
      it->busy = std::max(it->busy, r.busy);
      it->restarts = std::max(it->restarts, r.restarts);
      it->queued = std::max(it->queued, r.queued);
    }
  }
  return out;
}

void collect_run_status(caf::event_based_actor* self, const caf::actor& supervisor,
                        std::function<void(status_report)> done) {
  auto parts = std::make_shared<std::vector<status_report>>();
  auto remaining = std::make_shared<int>(3);
  auto finish = [=] {
    if (--*remaining == 0) done(merged_status(*parts));
  };
  self->request(supervisor, 2s, status_atom::value)
      .then([=](status_report& s) { parts->push_back(std::move(s)), finish(); },
            [=](caf::error&) { finish(); });
  for (const char* role : {"conductor", "learner"}) {
    self->request(supervisor, 2s, pool_atom::value, std::string(role))
        .then(
            [=](const std::vector<caf::actor>& members) {
              if (members.empty()) return finish();
              self->request(members.front(), 2s, status_atom::value)
                  .then([=](status_report& s) { parts->push_back(std::move(s)), finish(); },
                        [=](caf::error&) { finish(); });
            },
            [=](caf::error&) { finish(); });
  }
}

void scale_role(caf::event_based_actor* self, const caf::actor& supervisor, const control& c,
                std::function<void()> after, std::function<void(status_report)> done) {
  const double deadline_s = control_deadline_s(c);
  const auto deadline = std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000));
  const std::string role = c.role;
  self->request(supervisor, deadline, scale_atom::value, c.role, c.count)
      .then([=](int32_t) { after(); },
            [=](caf::error& err) {
              status_report r;
              const bool late = err.category() == caf::atom("system") &&
                                err.code() == static_cast<uint8_t>(caf::sec::request_timeout);
              char within[32];
              std::snprintf(within, sizeof within, "%.3g", deadline_s);
              r.error = "scale " + role + ": " +
                        (late ? std::string("not done within ") + within +
                                    " s (the client's --timeout); members started so far keep running"
                              : error_sentence(err));
              done(std::move(r));
            });
}

namespace {

caf::behavior control_desk(caf::event_based_actor* self, caf::actor supervisor) {
  self->monitor(supervisor);  // the run's end is the desk's
  self->set_down_handler([=](caf::down_msg&) { self->quit(); });
  return {
      [=](stop_atom) { self->quit(); },
      [=](status_atom) -> caf::result<status_report> {
        auto rp = self->make_response_promise();
        collect_run_status(self, supervisor, [=](status_report r) mutable { rp.deliver(std::move(r)); });
        return rp;
      },
      [=](const control& c, const std::string& address,
          const std::string& key) -> caf::result<status_report> {
        auto rp = self->make_response_promise();
        auto answer = [=](status_report r) mutable { rp.deliver(std::move(r)); };
        auto with_status = [=] { collect_run_status(self, supervisor, answer); };
        status_report refused;
        if (refused.error = control_refusal(c, {address, key}); !refused.error.empty()) {
          spdlog::warn("control: {}", refused.error);
          answer(std::move(refused));
        } else if (c.command == "status") {
          with_status();
        } else if (c.command == "scale" && c.args.count("node") && !c.args.at("node").empty()) {
          refused.error = "this run has no cluster endpoint (cluster.listen), so it has no nodes to drain";
          answer(std::move(refused));
        } else if (c.command == "scale") {
          scale_role(self, supervisor, c, with_status, answer);
        } else {
          refused.error = "unknown command '" + c.command + "' (the head takes status and scale)";
          answer(std::move(refused));
        }
        return rp;
      },
  };
}

}  // namespace

caf::actor spawn_control_desk(caf::actor_system& sys, caf::actor supervisor) {
  return sys.spawn(control_desk, std::move(supervisor));
}

}  // namespace crucible::runtime
