#include "runtime/hosting/supervisor.hpp"

#include "runtime/config/run_checks.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::runtime {

const std::vector<std::string>& role_start_order() {
  static const std::vector<std::string> order = {"replay_buffer", "learner",  "verifier",
                                                 "benchmarker",   "compiler", "generator"};
  return order;
}

namespace {

using clock = std::chrono::steady_clock;

// A restart storm (a role that dies as fast as it is started) is reported and stopped, not fed forever.
constexpr int max_restarts_per_minute = 20;

struct member {
  caf::actor handle;
  int index = 0;
};

struct supervisor_state {
  std::shared_ptr<const run_context> run;
  std::shared_ptr<const role_registry> registry;
  std::map<std::string, std::vector<member>> pools;
  std::map<caf::actor_addr, std::pair<std::string, int>> owner;
  std::map<std::string, int> restarts;
  std::map<std::string, std::deque<clock::time_point>> recent_restarts;
  std::map<std::string, caf::message> retained;  // role -> latest publication
  std::vector<caf::actor> subscribers;
  int next_external = -1;  // external members (remote stages) get negative indices and are never restarted
  caf::actor observer;
  bool stopping = false;
  static inline const char* name = "supervisor";
};

using supervisor_actor = caf::stateful_actor<supervisor_state>;

std::vector<caf::actor> members_of(supervisor_actor* self, const std::string& role) {
  std::vector<caf::actor> out;
  for (const auto& m : self->state.pools[role]) out.push_back(m.handle);
  return out;
}

void forget(supervisor_actor* self, const std::string& role, int index) {
  auto& pool = self->state.pools[role];
  pool.erase(std::remove_if(pool.begin(), pool.end(), [&](const member& m) { return m.index == index; }),
             pool.end());
}

void notify(supervisor_actor* self, const std::string& role) {
  auto members = members_of(self, role);
  for (const auto& s : self->state.subscribers) self->send(s, pool_atom::value, role, members);
}

bool start_member(supervisor_actor* self, const std::string& role, int index) {
  const auto* factory = self->state.registry->find(role);
  if (!factory) return false;
  role_context ctx{self->state.run, caf::actor_cast<caf::actor>(self), role, index, self->state.observer};
  caf::actor a = (*factory)(self->system(), ctx);
  if (!a) return false;
  self->monitor(a);
  self->state.owner[a.address()] = {role, index};
  auto& pool = self->state.pools[role];
  auto it = std::find_if(pool.begin(), pool.end(), [&](const member& m) { return m.index == index; });
  if (it != pool.end()) {
    it->handle = a;
  } else {
    pool.push_back({a, index});
  }
  if (auto r = self->state.retained.find(role); r != self->state.retained.end()) self->send(a, r->second);
  return true;
}

caf::behavior supervisor(supervisor_actor* self, std::shared_ptr<const run_context> run,
                         std::shared_ptr<const role_registry> registry, caf::actor observer) {
  self->state.run = run;
  self->state.observer = observer;
  self->state.registry = registry;
  std::vector<std::string> order = role_start_order();
  for (const auto& [role, n] : run->cfg.roles)
    if (std::find(order.begin(), order.end(), role) == order.end() && role != "conductor")
      order.push_back(role);
  order.push_back("conductor");
  for (const auto& role : order) {
    auto it = run->cfg.roles.find(role);
    if (it == run->cfg.roles.end()) continue;
    for (int i = 0; i < it->second; ++i)
      if (!start_member(self, role, i)) spdlog::error("supervisor: could not start {} #{}", role, i);
  }

  self->set_down_handler([=](const caf::down_msg& dm) {
    auto it = self->state.owner.find(dm.source);
    if (it == self->state.owner.end()) return;
    auto [role, index] = it->second;
    self->state.owner.erase(it);
    bool deliberate = dm.reason == caf::exit_reason::normal || dm.reason == caf::exit_reason::user_shutdown;
    if (self->state.stopping || deliberate || index < 0) {
      forget(self, role, index);
      notify(self, role);
      if (self->state.stopping && self->state.owner.empty()) self->quit();
      return;
    }
    auto& recent = self->state.recent_restarts[role];
    auto now = clock::now();
    while (!recent.empty() && now - recent.front() > std::chrono::minutes(1)) recent.pop_front();
    if (static_cast<int>(recent.size()) >= max_restarts_per_minute) {
      spdlog::error("supervisor: {} #{} died ({}) and has restarted {} times in a minute; not restarting it",
                    role, index, caf::to_string(dm.reason), recent.size());
      forget(self, role, index);
      notify(self, role);
      return;
    }
    recent.push_back(now);
    ++self->state.restarts[role];
    spdlog::warn("supervisor: {} #{} died ({}); restarting it", role, index, caf::to_string(dm.reason));
    if (!start_member(self, role, index)) {
      forget(self, role, index);
      spdlog::error("supervisor: restarting {} #{} failed", role, index);
    }
    notify(self, role);
  });

  return {
      [=](pool_atom, const std::string& role) { return members_of(self, role); },
      [=](pool_atom) {
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        if (!sender) return;
        self->state.subscribers.push_back(sender);
        for (const auto& [role, pool] : self->state.pools)
          self->send(sender, pool_atom::value, role, members_of(self, role));
      },
      [=](publish_atom, const std::string& role, const caf::message& msg) {
        self->state.retained[role] = msg;
        for (const auto& m : self->state.pools[role]) self->send(m.handle, msg);
      },
      [=](status_atom) {
        status_report report;
        for (const auto& [role, pool] : self->state.pools) {
          role_status rs;
          rs.role = role;
          rs.actors = static_cast<int32_t>(pool.size());
          rs.restarts = self->state.restarts[role];
          report.roles.push_back(rs);
        }
        return report;
      },
      [=](join_atom, const std::string& role, const caf::actor& a) {
        // A member started elsewhere (a node's stage, through the cluster gateway): pooled and monitored like
        // the others, dropped from the pool when it goes, never restarted here.
        if (self->state.stopping || !a) return;
        int index = self->state.next_external--;
        self->monitor(a);
        self->state.owner[a.address()] = {role, index};
        self->state.pools[role].push_back({a, index});
        notify(self, role);
      },
      [=](scale_atom, const std::string& role, int32_t count) -> caf::result<int32_t> {
        // This process's members of a role: started up to `count`, or the newest stopped (an actor stopped
        // this way finishes the request it is serving; work still queued for it is re-dispatched).
        if (self->state.stopping) return caf::make_error(caf::sec::runtime_error, "the run is stopping");
        if (is_singleton_role(role))
          return caf::make_error(caf::sec::runtime_error,
                                 "roles." + role + " is exactly 1; it does not scale");
        if (!self->state.registry->find(role))
          return caf::make_error(caf::sec::runtime_error, "no such role '" + role + "'");
        if (count < 0) return caf::make_error(caf::sec::runtime_error, "count must be >= 0");
        // Each member is an actor with its own resources: a typo of 200000 must not start 200000.
        if (count > self->state.run->cfg.run.max_role_count)
          return caf::make_error(caf::sec::runtime_error,
                                 "count " + std::to_string(count) + " is above run.max_role_count (" +
                                     std::to_string(self->state.run->cfg.run.max_role_count) + ")");
        auto& pool = self->state.pools[role];
        std::vector<int> local;
        for (const auto& m : pool)
          if (m.index >= 0) local.push_back(m.index);
        std::sort(local.begin(), local.end());
        int have = static_cast<int>(local.size());
        for (int next = local.empty() ? 0 : local.back() + 1; have < count; ++next, ++have)
          if (!start_member(self, role, next))
            return caf::make_error(caf::sec::runtime_error, "could not start " + role);
        for (int k = static_cast<int>(local.size()) - 1; have > count && k >= 0; --k, --have) {
          auto it =
              std::find_if(pool.begin(), pool.end(), [&](const member& m) { return m.index == local[k]; });
          if (it == pool.end()) continue;
          caf::actor victim = it->handle;
          pool.erase(it);  // out of the pool now: no new work reaches it
          self->send_exit(victim, caf::exit_reason::user_shutdown);
        }
        notify(self, role);
        return count;
      },
      [=](stop_atom) {
        self->state.stopping = true;
        for (const auto& [role, pool] : self->state.pools)
          for (const auto& m : pool) self->send_exit(m.handle, caf::exit_reason::user_shutdown);
        if (self->state.owner.empty()) self->quit();
      },
  };
}

}  // namespace

expected<caf::actor> spawn_supervisor(caf::actor_system& sys, std::shared_ptr<const run_context> run,
                                      std::shared_ptr<const role_registry> registry, caf::actor observer) {
  if (auto st = check_run_plan(run->cfg, registry.get()); !st) return st.err();
  return sys.spawn(supervisor, std::move(run), std::move(registry), std::move(observer));
}

}  // namespace crucible::runtime
