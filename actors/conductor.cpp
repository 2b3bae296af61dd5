// The conductor: picks tasks, asks the replay buffer for contrastive exemplars and a generator for a group
// of G candidates, drives every candidate through the configured pipeline stages, and hands each finished
// group to the replay buffer. It keeps the ledger of work in flight: a stage whose actor dies or stops
// answering is re-dispatched to another (or the restarted) member of the pool, stale answers are ignored,
// and each candidate is scored exactly once.
#include <algorithm>
#include <map>
#include <set>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/roles.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/type_ids.hpp"
#include "runtime/actor_failures.hpp"
#include "runtime/pipeline_stages.hpp"

namespace crucible::actors {
namespace {

using namespace std::chrono_literals;

struct candidate_entry {
  scored_candidate scored;
  size_t stage = 0;     // index into the pipeline
  int attempts = 0;     // dispatches of the current stage
  uint64_t ticket = 0;  // identifies the dispatch whose answer counts
  bool done = false;
};

struct group_entry {
  prompt p;
  std::vector<std::string> ids;
  size_t remaining = 0;
  int64_t policy_version = 0;
  int attempts = 0;  // generation attempts
  bool inserting = false;
};

struct conductor_state {
  std::shared_ptr<const runtime::run_context> run;
  std::map<std::string, std::vector<caf::actor>> pools;
  std::map<caf::actor_addr, int> load;
  std::map<std::string, group_entry> groups;
  std::map<std::string, candidate_entry> cands;
  std::set<std::string> scored_ids;
  std::map<std::string, double> best;
  size_t next_task = 0;
  int64_t next_group = 0;
  uint64_t next_ticket = 0;
  int64_t generated = 0;
  int64_t scored = 0;
  int64_t redispatched = 0;
  int64_t abandoned = 0;
  int64_t stale_answers = 0;
  bool stopping = false;
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
  status_report s;
  s.candidates_generated = self->state.generated;
  s.candidates_scored = self->state.scored;
  s.candidates_abandoned = self->state.abandoned;
  s.candidates_in_flight = self->state.generated - self->state.scored - self->state.abandoned;
  s.redispatched = self->state.redispatched;
  s.speedup_best = self->state.best;
  s.wall_s = self->state.run->elapsed_s();
  s.candidates_per_s = s.wall_s > 0 ? static_cast<double>(self->state.scored) / s.wall_s : 0.0;
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

void maybe_finish_stop(conductor_actor* self) {
  if (!self->state.stopping || !self->state.groups.empty()) return;
  auto r = report(self);
  for (auto& rp : self->state.stop_waiters) rp.deliver(r);
  self->state.stop_waiters.clear();
}

void fill_groups(conductor_actor* self);
void dispatch(conductor_actor* self, const std::string& id);

void insert_group(conductor_actor* self, const std::string& gid, bool partial = false) {
  auto git = self->state.groups.find(gid);
  if (git == self->state.groups.end()) return;
  auto& g = git->second;
  g.inserting = true;
  scored_group sg;
  sg.partial = partial;
  sg.group_id = gid;
  sg.task = g.p.task.name;
  sg.policy_version = g.policy_version;
  sg.created_unix = runtime::unix_now();
  for (const auto& id : g.ids) sg.members.push_back(self->state.cands[id].scored);
  caf::actor replay = pick(self, "replay_buffer");
  auto retry = [=] { self->delayed_send(self, 500ms, insert_atom::value, gid, partial); };
  if (!replay) return retry();
  self->request(replay, 30s, insert_atom::value, sg)
      .then(
          [=](int64_t) {
            auto it = self->state.groups.find(gid);
            if (it == self->state.groups.end()) return;
            for (const auto& id : it->second.ids) self->state.cands.erase(id);
            self->state.groups.erase(it);
            maybe_finish_stop(self);
            fill_groups(self);
          },
          [=](caf::error& err) {
            spdlog::warn("conductor: storing group {} failed ({}); retrying", gid, caf::to_string(err));
            retry();
          });
}

void finish(conductor_actor* self, const std::string& id) {
  auto& c = self->state.cands[id];
  if (c.done) return;
  c.done = true;
  if (!self->state.scored_ids.insert(id).second) {
    spdlog::error("conductor: candidate {} finished twice; the second is ignored", id);
    return;
  }
  ++self->state.scored;
  c.scored.reward = c.scored.judged.reward;
  if (kernels::has_outcome(c.scored.judged, kernels::outcome::pass)) {
    auto& b = self->state.best[c.scored.cand.task];
    b = std::max(b, c.scored.judged.speedup);
  }
  auto& g = self->state.groups[c.scored.cand.group_id];
  if (--g.remaining == 0) insert_group(self, c.scored.cand.group_id);
}

// A stage that cannot be completed after dispatch.max_attempts tries: the candidate is scored as an error
// (reward 0) rather than lost, and the reason is kept as evidence.
void give_up(conductor_actor* self, const std::string& id, const std::string& why) {
  auto& c = self->state.cands[id];
  spdlog::error("conductor: candidate {} failed in stage {}: {}", id, self->state.run->cfg.pipeline[c.stage],
                why);
  auto earlier = std::move(c.scored.judged.evidence);  // what earlier stages found stays on record
  c.scored.judged = kernels::pipeline_error_verdict(id, c.scored.cand.content_hash, why);
  c.scored.judged.evidence.insert(c.scored.judged.evidence.begin(), earlier.begin(), earlier.end());
  finish(self, id);
}

void advance(conductor_actor* self, const std::string& id) {
  auto& c = self->state.cands[id];
  ++c.stage;
  c.attempts = 0;
  dispatch(self, id);
}

template <class Result>
void on_stage_result(conductor_actor* self, const std::string& id, uint64_t ticket, caf::actor_addr actor,
                     Result&& store) {
  --self->state.load[actor];
  auto it = self->state.cands.find(id);
  if (it == self->state.cands.end() || it->second.done || it->second.ticket != ticket) {
    ++self->state.stale_answers;
    return;
  }
  store(it->second);
  advance(self, id);
}

void on_stage_error(conductor_actor* self, const std::string& id, uint64_t ticket, caf::actor_addr actor,
                    const caf::error& err) {
  --self->state.load[actor];
  auto it = self->state.cands.find(id);
  if (it == self->state.cands.end() || it->second.done || it->second.ticket != ticket) return;
  auto& c = it->second;
  const auto& stage = self->state.run->cfg.pipeline[c.stage];
  if (c.attempts >= self->state.run->cfg.dispatch.max_attempts) {
    give_up(
        self, id,
        "stage " + stage + " failed " + std::to_string(c.attempts) + " times, last: " + caf::to_string(err));
    return;
  }
  ++self->state.redispatched;
  spdlog::warn("conductor: stage {} of {} failed ({}); re-dispatching", stage, id, caf::to_string(err));
  self->delayed_send(self, 200ms, stage_atom::value, id);
}

void dispatch(conductor_actor* self, const std::string& id) {
  auto cit = self->state.cands.find(id);
  if (cit == self->state.cands.end() || cit->second.done) return;
  auto& c = cit->second;
  const auto& pipeline = self->state.run->cfg.pipeline;
  if (c.stage >= pipeline.size()) return finish(self, id);
  const std::string& stage = pipeline[c.stage];
  // Without an artifact there is nothing to run: benchmarking is skipped, the verifier records why.
  if (stage == "benchmark" && !c.scored.compiled.ok) {
    c.scored.bench.candidate_id = id;
    c.scored.bench.task = c.scored.cand.task;
    c.scored.bench.status = "error";
    c.scored.bench.error = "not compiled";
    return advance(self, id);
  }
  caf::actor a = pick(self, runtime::role_of_stage(stage));
  if (!a) {  // the pool is empty for now (its member is restarting): try again shortly
    self->delayed_send(self, 250ms, stage_atom::value, id);
    return;
  }
  ++c.attempts;
  c.ticket = ++self->state.next_ticket;
  uint64_t ticket = c.ticket;
  auto addr = a.address();
  ++self->state.load[addr];
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(self->state.run->cfg.dispatch.stage_timeout_s));
  auto fail = [=](caf::error& err) { on_stage_error(self, id, ticket, addr, err); };
  if (stage == "compile") {
    self->request(a, timeout, compile_atom::value, c.scored.cand)
        .then(
            [=](compile_result& r) {
              on_stage_result(self, id, ticket, addr,
                              [&](candidate_entry& e) { e.scored.compiled = std::move(r); });
            },
            fail);
  } else if (stage == "benchmark") {
    double best = self->state.best[c.scored.cand.task];
    self->request(a, timeout, bench_atom::value, c.scored.cand, c.scored.compiled, best)
        .then(
            [=](bench_result& r) {
              on_stage_result(self, id, ticket, addr,
                              [&](candidate_entry& e) { e.scored.bench = std::move(r); });
            },
            fail);
  } else if (stage == "verify") {
    self->request(a, timeout, verify_atom::value, c.scored.cand, c.scored.compiled, c.scored.bench)
        .then(
            [=](verdict& v) {
              on_stage_result(self, id, ticket, addr,
                              [&](candidate_entry& e) { e.scored.judged = std::move(v); });
            },
            fail);
  } else {
    // A custom stage sees the candidate as scored so far and returns it, possibly amended.
    self->request(a, timeout, stage_atom::value, c.scored)
        .then(
            [=](scored_candidate& s) {
              on_stage_result(self, id, ticket, addr, [&](candidate_entry& e) { e.scored = std::move(s); });
            },
            fail);
  }
}

void generate(conductor_actor* self, const std::string& gid) {
  auto git = self->state.groups.find(gid);
  if (git == self->state.groups.end()) return;
  auto& g = git->second;
  caf::actor replay = pick(self, "replay_buffer");
  caf::actor gen = pick(self, "generator");
  if (!replay || !gen) {
    self->delayed_send(self, 250ms, generate_atom::value, gid);
    return;
  }
  ++g.attempts;
  auto retry = [=](const caf::error& err) {
    auto it = self->state.groups.find(gid);
    if (it == self->state.groups.end()) return;
    if (it->second.attempts >= self->state.run->cfg.dispatch.max_attempts) {
      // Nothing was generated, so nothing is lost: the group is dropped and another takes its place.
      spdlog::error("conductor: generating group {} failed {} times ({}); dropping it", gid,
                    it->second.attempts, caf::to_string(err));
      self->state.groups.erase(it);
      maybe_finish_stop(self);
      fill_groups(self);
      return;
    }
    spdlog::warn("conductor: generating group {} failed ({}); retrying", gid, caf::to_string(err));
    self->delayed_send(self, 250ms, generate_atom::value, gid);
  };
  auto gen_addr = gen.address();
  ++self->state.load[gen_addr];
  self->request(replay, 30s, exemplar_atom::value, g.p)
      .then(
          [=](prompt& p) {
            auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::duration<double>(self->state.run->cfg.dispatch.stage_timeout_s));
            self->request(gen, timeout, generate_atom::value, p)
                .then(
                    [=](std::vector<candidate>& batch) {
                      --self->state.load[gen_addr];
                      auto it = self->state.groups.find(gid);
                      if (it == self->state.groups.end() || !it->second.ids.empty()) return;
                      auto& grp = it->second;
                      grp.p = p;
                      grp.remaining = batch.size();
                      grp.policy_version = batch.empty() ? 0 : batch.front().policy_version;
                      for (auto& cand : batch) {
                        std::string id = cand.id;
                        grp.ids.push_back(id);
                        candidate_entry e;
                        e.scored.cand = std::move(cand);
                        self->state.cands[id] = std::move(e);
                        ++self->state.generated;
                      }
                      if (batch.empty()) {
                        self->state.groups.erase(it);
                        fill_groups(self);
                        return;
                      }
                      for (const auto& id : grp.ids) dispatch(self, id);
                    },
                    [=](caf::error& err) {
                      --self->state.load[gen_addr];
                      retry(err);
                    });
          },
          [=](caf::error& err) {
            --self->state.load[gen_addr];
            retry(err);
          });
}

void fill_groups(conductor_actor* self) {
  const auto& run = *self->state.run;
  while (!self->state.stopping &&
         static_cast<int64_t>(self->state.groups.size()) < run.cfg.async.groups_in_flight) {
    const task_spec& task = run.tasks[self->state.next_task++ % run.tasks.size()];
    std::string gid = run.incarnation + "-g" + std::to_string(self->state.next_group++);
    group_entry g;
    g.p.group_id = gid;
    g.p.task = task;
    g.p.group_size = static_cast<int32_t>(run.cfg.learner.group_size);
    g.p.target = run.cfg.target;
    self->state.groups[gid] = std::move(g);
    generate(self, gid);
  }
}

caf::behavior conductor(conductor_actor* self, runtime::role_context ctx) {
  runtime::log_failures(self, "conductor #" + std::to_string(ctx.index));
  self->state.run = ctx.run;
  self->send(ctx.supervisor, pool_atom::value);  // subscribe: pools arrive now and on every change
  self->delayed_send(self, 100ms, tick_atom::value);
  return {
      [=](pool_atom, const std::string& role, const std::vector<caf::actor>& members) {
        self->state.pools[role] = members;
      },
      [=](tick_atom) { fill_groups(self); },
      [=](stage_atom, const std::string& id) { dispatch(self, id); },
      [=](generate_atom, const std::string& gid) { generate(self, gid); },
      [=](insert_atom, const std::string& gid, bool partial) { insert_group(self, gid, partial); },
      [=](stop_atom, double grace_s) -> caf::result<status_report> {
        self->state.stopping = true;
        if (self->state.groups.empty()) return report(self);
        auto rp = self->make_response_promise();
        self->state.stop_waiters.push_back(rp);
        self->delayed_send(
            self,
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(grace_s)),
            stop_atom::value);
        return rp;
      },
      [=](stop_atom) {
        // The grace period is over. Nothing generated is dropped silently: every unfinished candidate gets
        // the verdict "abandoned" and its group is stored as partial (kept for the record, never trained on).
        if (self->state.stop_waiters.empty()) return;
        std::vector<std::string> unfinished;
        for (auto& [gid, g] : self->state.groups) {
          if (g.ids.empty()) continue;  // still generating: no candidate exists yet
          if (g.inserting) continue;    // complete, being stored
          for (const auto& id : g.ids) {
            auto& c = self->state.cands[id];
            if (c.done) continue;
            c.done = true;
            c.scored.judged = kernels::abandoned_verdict(
                id, c.scored.cand.content_hash,
                self->state.run->cfg.pipeline[std::min(c.stage, self->state.run->cfg.pipeline.size() - 1)]);
            c.scored.reward = 0.0;
            ++self->state.abandoned;
          }
          unfinished.push_back(gid);
        }
        for (auto it = self->state.groups.begin(); it != self->state.groups.end();)
          it = it->second.ids.empty() ? self->state.groups.erase(it) : std::next(it);
        if (!unfinished.empty())
          spdlog::warn(
              "conductor: stopping; {} unfinished candidates stored as abandoned in {} partial groups",
              self->state.abandoned, unfinished.size());
        for (const auto& gid : unfinished) insert_group(self, gid, true);
        maybe_finish_stop(self);
        // If the replay buffer cannot take them, answer anyway after a last wait rather than hang the stop.
        self->delayed_send(self, 10s, stop_atom::value, true);
      },
      [=](stop_atom, bool) {
        if (self->state.stop_waiters.empty()) return;
        spdlog::error("conductor: {} groups could not be stored before the stop", self->state.groups.size());
        auto r = report(self);
        for (auto& rp : self->state.stop_waiters) rp.deliver(r);
        self->state.stop_waiters.clear();
      },
      [=](status_atom) { return report(self); },
  };
}

}  // namespace

caf::actor spawn_conductor(caf::actor_system& sys, const runtime::role_context& ctx) {
  return sys.spawn(conductor, ctx);
}

}  // namespace crucible::actors
