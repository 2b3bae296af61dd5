// The conductor: picks tasks, asks the replay buffer for contrastive exemplars and a generator for a group
// of G candidates, drives every candidate through the configured pipeline stages, and hands each finished
// group to the replay buffer. What happens to a candidate is decided by the pipeline ledger
// (runtime/pipeline/pipeline_ledger), which this actor feeds with events and whose commands it carries out:
// every candidate is recorded in replay.sqlite before its first dispatch and after each stage, so a head
// killed at any instant resumes it; a stage whose actor dies or stops answering is re-dispatched; stale
// answers are ignored; each candidate is scored exactly once.
#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/roles.hpp"
#include "messages/type_ids.hpp"
#include "runtime/hosting/actor_failures.hpp"
#include "runtime/hosting/fail_points.hpp"
#include "runtime/pipeline/pipeline_ledger.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::actors {
namespace {

using namespace std::chrono_literals;

struct conductor_state {
  std::shared_ptr<const runtime::run_context> run;
  std::map<std::string, std::vector<caf::actor>> pools;
  std::map<caf::actor_addr, int> load;
  std::unique_ptr<runtime::pipeline_ledger> ledger;
  bool restored = false;  // the groups an earlier process left in flight are taken over before new ones
  std::vector<caf::response_promise> stop_waiters;
  static inline const char* name = "conductor";
};

using conductor_actor = caf::stateful_actor<conductor_state>;

caf::actor pick(conductor_actor* self, const std::string& role) {
  auto it = self->state.pools.find(role);
  if (it == self->state.pools.end() || it->second.empty()) return {};
  caf::actor best;
  int best_load = 0;
  for (const auto& a : it->second) {
    int l = self->state.load[a.address()];
    if (!best || l < best_load) best = a, best_load = l;
  }
  return best;
}

status_report report(conductor_actor* self) {
  const auto& n = self->state.ledger->counts();
  status_report s;
  s.candidates_generated = n.generated;
  s.candidates_scored = n.scored;
  s.candidates_abandoned = n.abandoned;
  s.candidates_in_flight = n.in_flight();
  s.candidates_resumed = n.restored;
  s.redispatched = n.redispatched;
  s.speedup_best = self->state.ledger->best();
  s.wall_s = self->state.run->elapsed_s();
  s.candidates_per_s = s.wall_s > 0 ? static_cast<double>(n.scored) / s.wall_s : 0.0;
  // Per role: the members the conductor dispatches to now and the requests they hold.
  for (const auto& [role, pool] : self->state.pools) {
    role_status rs;
    rs.role = role;
    rs.actors = static_cast<int32_t>(pool.size());
    for (const auto& a : pool)
      if (auto it = self->state.load.find(a.address()); it != self->state.load.end()) rs.busy += it->second;
    s.roles.push_back(rs);
  }
  return s;
}

void answer_stop(conductor_actor* self) {
  if (self->state.stop_waiters.empty()) return;
  auto r = report(self);
  for (auto& rp : self->state.stop_waiters) rp.deliver(r);
  self->state.stop_waiters.clear();
}

std::chrono::milliseconds stage_timeout(conductor_actor* self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(self->state.run->cfg.dispatch.stage_timeout_s));
}

void carry_out(conductor_actor* self, const runtime::ledger_commands& commands);

void generate(conductor_actor* self, const std::string& gid, const std::string& task) {
  caf::actor replay = pick(self, "replay_buffer");
  caf::actor gen = pick(self, "generator");
  if (!replay || !gen) {  // a pool is empty for now (its member is restarting): ask again shortly
    self->delayed_send(self, 250ms, generate_atom::value, gid, task);
    return;
  }
  const auto& run = *self->state.run;
  prompt p;
  p.group_id = gid;
  p.task = run.task_by_name.at(task);
  p.group_size = static_cast<int32_t>(run.cfg.learner.group_size);
  p.target = run.cfg.target;
  auto gen_addr = gen.address();
  ++self->state.load[gen_addr];
  auto fail = [=](caf::error& err) {
    --self->state.load[gen_addr];
    spdlog::warn("conductor: generating group {} failed ({})", gid, caf::to_string(err));
    carry_out(self, self->state.ledger->generate_failed(gid, caf::to_string(err)));
  };
  self->request(replay, 30s, exemplar_atom::value, p)
      .then(
          [=](prompt& with_exemplars) {
            self->request(gen, stage_timeout(self), generate_atom::value, with_exemplars)
                .then(
                    [=](std::vector<candidate>& batch) {
                      --self->state.load[gen_addr];
                      runtime::fail_point("conductor.generated");
                      carry_out(self, self->state.ledger->generated(gid, std::move(batch)));
                    },
                    fail);
          },
          fail);
}

void record(conductor_actor* self, const std::string& gid, const std::vector<std::string>& ids) {
  caf::actor replay = pick(self, "replay_buffer");
  if (!replay) {
    self->delayed_send(self, 250ms, record_atom::value, gid);
    return;
  }
  self->request(replay, 30s, record_atom::value, self->state.ledger->record_of(gid, ids))
      .then([=](int64_t) { carry_out(self, self->state.ledger->recorded(gid)); },
            [=](caf::error& err) {
              spdlog::warn("conductor: recording group {} failed ({}); retrying", gid, caf::to_string(err));
              carry_out(self, self->state.ledger->record_failed(gid));
            });
}

void store(conductor_actor* self, const std::string& gid, bool partial) {
  runtime::fail_point("conductor.scored");
  caf::actor replay = pick(self, "replay_buffer");
  if (!replay) {
    self->delayed_send(self, 500ms, insert_atom::value, gid, partial);
    return;
  }
  self->request(replay, 30s, insert_atom::value, self->state.ledger->group_of(gid, partial))
      .then([=](int64_t) { carry_out(self, self->state.ledger->stored(gid)); },
            [=](caf::error& err) {
              spdlog::warn("conductor: storing group {} failed ({}); retrying", gid, caf::to_string(err));
              carry_out(self, self->state.ledger->store_failed(gid));
            });
}

// Sends one stage of one candidate: the same message for every stage, wherever its role runs; the answer's
// slot (runtime/pipeline/pipeline_stages) fills the candidate as scored so far.
void send_stage(conductor_actor* self, const runtime::ledger_command& cmd) {
  const std::string id = cmd.candidate_id, stage = cmd.stage;
  const uint64_t ticket = cmd.ticket;
  caf::actor a = pick(self, runtime::role_of_stage(stage));
  const scored_candidate* c = self->state.ledger->candidate_of(id);
  if (!a || !c) return carry_out(self, self->state.ledger->unserved(id, ticket));
  auto addr = a.address();
  ++self->state.load[addr];
  auto failed = [=](const std::string& why) {
    auto commands = self->state.ledger->failed(id, ticket, why);
    if (!commands.empty() && commands.front().action == runtime::ledger_action::dispatch)
      spdlog::warn("conductor: stage {} of {} failed ({}); re-dispatching", stage, id, why);
    else if (!commands.empty())
      spdlog::error("conductor: candidate {} failed in stage {}: {}", id, stage, why);
    carry_out(self, commands);
  };
  stage_request req{stage, *c, self->state.ledger->best(c->cand.task)};
  self->request(a, stage_timeout(self), stage_atom::value, std::move(req))
      .then(
          [=](scored_candidate& answer) {
            --self->state.load[addr];
            const scored_candidate* now = self->state.ledger->candidate_of(id);
            scored_candidate result = now ? *now : scored_candidate{};
            if (now)
              if (auto st = runtime::take_stage_answer(stage, result, std::move(answer)); !st)
                return failed(st.message());
            auto commands = self->state.ledger->answered(id, ticket, std::move(result));
            runtime::fail_point("conductor.answered");
            carry_out(self, commands);
          },
          [=](caf::error& err) {
            --self->state.load[addr];
            failed(caf::to_string(err));
          });
  runtime::fail_point("conductor.dispatch");
}

void carry_out(conductor_actor* self, const runtime::ledger_commands& commands) {
  using runtime::ledger_action;
  for (const auto& c : commands) {
    switch (c.action) {
      case ledger_action::generate:
        if (c.later)
          self->delayed_send(self, 250ms, generate_atom::value, c.group_id);
        else
          generate(self, c.group_id, c.task);
        break;
      case ledger_action::record:
        if (c.later)
          self->delayed_send(self, 500ms, record_atom::value, c.group_id);
        else
          record(self, c.group_id, c.candidate_ids);
        break;
      case ledger_action::progress:
        // Fire and forget (anonymous, so the count it answers goes nowhere): a lost note only means a
        // resumed run repeats a stage.
        if (auto replay = pick(self, "replay_buffer"))
          caf::anon_send(replay, record_atom::value,
                         self->state.ledger->record_of(c.group_id, c.candidate_ids));
        break;
      case ledger_action::dispatch:
        if (c.later)
          self->delayed_send(self, 200ms, stage_atom::value, c.candidate_id);
        else
          send_stage(self, c);
        break;
      case ledger_action::store:
        if (c.later)
          self->delayed_send(self, 500ms, insert_atom::value, c.group_id, c.partial);
        else
          store(self, c.group_id, c.partial);
        break;
      case ledger_action::stopped:
        answer_stop(self);
        break;
    }
  }
}

// Before any new group: the groups a killed or stopped head left in flight, from the replay database.
void restore(conductor_actor* self) {
  caf::actor replay = pick(self, "replay_buffer");
  if (!replay) {
    self->delayed_send(self, 100ms, tick_atom::value);
    return;
  }
  self->request(replay, 30s, restore_atom::value)
      .then(
          [=](group_batch& in_flight) {
            if (self->state.restored) return;
            self->state.restored = true;
            auto commands = self->state.ledger->restore(std::move(in_flight.groups), in_flight.speedup_best);
            if (auto n = self->state.ledger->counts().restored; n > 0)
              spdlog::info("conductor: resuming {} candidates the previous run left in flight", n);
            carry_out(self, commands);
            carry_out(self, self->state.ledger->fill());
          },
          [=](caf::error& err) {
            spdlog::warn("conductor: the replay buffer did not list work in flight ({}); asking again",
                         caf::to_string(err));
            self->delayed_send(self, 250ms, tick_atom::value);
          });
}

caf::behavior conductor(conductor_actor* self, runtime::role_context ctx) {
  runtime::log_failures(self, "conductor #" + std::to_string(ctx.index));
  self->state.run = ctx.run;
  const auto& run = *ctx.run;
  runtime::ledger_options options;
  options.pipeline = run.cfg.pipeline;
  for (const auto& t : run.tasks) options.tasks.push_back(t.name);
  options.incarnation = run.incarnation;
  options.groups_in_flight = run.cfg.async.groups_in_flight;
  options.max_attempts = static_cast<int>(run.cfg.dispatch.max_attempts);
  self->state.ledger = std::make_unique<runtime::pipeline_ledger>(std::move(options));
  self->send(ctx.supervisor, pool_atom::value);  // subscribe: pools arrive now and on every change
  self->delayed_send(self, 100ms, tick_atom::value);
  return {
      [=](pool_atom, const std::string& role, const std::vector<caf::actor>& members) {
        self->state.pools[role] = members;
      },
      [=](tick_atom) {
        if (!self->state.restored)
          restore(self);
        else
          carry_out(self, self->state.ledger->fill());
      },
      [=](stage_atom, const std::string& id) { carry_out(self, self->state.ledger->dispatch(id)); },
      [=](generate_atom, const std::string& gid) { carry_out(self, self->state.ledger->regenerate(gid)); },
      [=](generate_atom, const std::string& gid, const std::string& task) { generate(self, gid, task); },
      [=](record_atom, const std::string& gid) { record(self, gid, {}); },
      [=](insert_atom, const std::string& gid, bool partial) { store(self, gid, partial); },
      [=](stop_atom, double grace_s) -> caf::result<status_report> {
        auto rp = self->make_response_promise<status_report>();
        self->state.stop_waiters.push_back(rp);
        self->delayed_send(
            self,
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(grace_s)),
            stop_atom::value);
        carry_out(self, self->state.ledger->stop());
        return rp;
      },
      [=](stop_atom) {
        // The grace period is over. Nothing generated is dropped silently: every unfinished candidate gets
        // the verdict "abandoned" and its group is stored as partial (kept for the record, never trained on).
        if (self->state.stop_waiters.empty()) return;
        auto commands = self->state.ledger->grace_over();
        if (auto n = self->state.ledger->counts().abandoned; n > 0)
          spdlog::warn("conductor: stopping; {} unfinished candidates stored as abandoned", n);
        carry_out(self, commands);
        // If the replay buffer cannot take them, answer anyway after a last wait rather than hang the stop.
        self->delayed_send(self, 10s, stop_atom::value, true);
      },
      [=](stop_atom, bool) {
        if (self->state.stop_waiters.empty()) return;
        spdlog::error("conductor: {} groups could not be stored before the stop",
                      self->state.ledger->groups());
        answer_stop(self);
      },
      [=](status_atom) { return report(self); },
  };
}

}  // namespace

caf::actor spawn_conductor(caf::actor_system& sys, const runtime::role_context& ctx) {
  return sys.spawn(conductor, ctx);
}

}  // namespace crucible::actors
