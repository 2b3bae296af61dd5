#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/options/generator_section.hpp"
#include "actors/options/grpo_section.hpp"
#include "actors/options/policy_section.hpp"
#include "actors/roles.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/type_ids.hpp"
#include "policies/grpo_trainer.hpp"
#include "policies/program_policy.hpp"
#include "runtime/hosting/actor_failures.hpp"
#include "runtime/hosting/fail_points.hpp"
#include "runtime/storage/checkpoints.hpp"
#include "runtime/storage/metrics_log.hpp"

namespace crucible::actors {
namespace {

using namespace std::chrono_literals;

struct learner_state {
  std::unique_ptr<policies::program_policy> policy;
  std::unique_ptr<policies::grpo_trainer> trainer;
  int64_t step = 0;
  int64_t version = 0;
  double wall_offset = 0.0;  // wall time of the runs this one resumes
  int64_t candidates_at_start = -1;
  std::vector<scored_group> pending;
  caf::actor replay;
  bool stopping = false;
  static inline const char* name = "learner";
};

using learner_actor = caf::stateful_actor<learner_state>;

void publish(learner_actor* self, const runtime::role_context& ctx) {
  weights_update w;
  w.version = self->state.version;
  w.policy = "program";
  w.bytes = self->state.policy->save_weights();
  w.created_unix = runtime::unix_now();
  self->send(ctx.supervisor, publish_atom::value, std::string("generator"), caf::make_message(std::move(w)));
}

status save(learner_actor* self, const runtime::role_context& ctx) {
  runtime::checkpoint c;
  c.step = self->state.step;
  c.policy_version = self->state.version;
  c.wall_s = self->state.wall_offset + ctx.run->elapsed_s();
  c.state = self->state.trainer->save_state();
  auto st = runtime::save_checkpoint(ctx.run->path("checkpoints"), c);
  if (st) spdlog::info("learner: checkpoint at step {}", c.step);
  return st;
}

runtime::step_metrics measure(learner_actor* self, const runtime::role_context& ctx, const group_batch& last,
                              const policies::step_stats& stats) {
  runtime::step_metrics m;
  m.step = self->state.step;
  m.policy_version = self->state.version;
  int64_t n = 0, correct = 0, flagged = 0, passed = 0;
  double reward = 0, speedup = 0, staleness = 0;
  for (const auto& g : self->state.pending) {
    staleness += static_cast<double>(self->state.version - 1 - g.policy_version);
    for (const auto& c : g.members) {
      ++n;
      reward += c.reward;
      correct += c.bench.correct ? 1 : 0;
      flagged += kernels::has_outcome(c.judged, kernels::outcome::hack) ? 1 : 0;
      if (kernels::has_outcome(c.judged, kernels::outcome::pass)) ++passed, speedup += c.judged.speedup;
    }
  }
  m.candidates = n;
  m.reward_mean = n ? reward / static_cast<double>(n) : 0.0;
  m.correct_rate = n ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  m.flagged_rate = n ? static_cast<double>(flagged) / static_cast<double>(n) : 0.0;
  m.speedup_mean = passed ? speedup / static_cast<double>(passed) : 0.0;
  m.staleness_mean =
      self->state.pending.empty() ? 0.0 : staleness / static_cast<double>(self->state.pending.size());
  m.candidates_total = last.candidates_total;
  m.wall_s = self->state.wall_offset + ctx.run->elapsed_s();
  m.loss = stats.loss;
  m.kl = stats.kl;
  m.entropy = stats.entropy;
  m.speedup_best = last.speedup_best;
  return m;
}

void train(learner_actor* self, const runtime::role_context& ctx, const group_batch& last) {
  auto stats = self->state.trainer->step(self->state.pending, ctx.run->task_by_name);
  if (!stats) {
    spdlog::error("learner: step {} failed: {}", self->state.step + 1, stats.message());
    self->state.pending.clear();
    return;
  }
  ++self->state.step;
  ++self->state.version;
  publish(self, ctx);
  auto m = measure(self, ctx, last, *stats);
  self->state.pending.clear();
  runtime::append_metrics(ctx.run->path("metrics.jsonl"), m);
  runtime::fail_point("learner.step");
  double elapsed = ctx.run->elapsed_s();
  double rate = elapsed > 0
                    ? static_cast<double>(last.candidates_total - self->state.candidates_at_start) / elapsed
                    : 0;
  std::string line = runtime::progress_line(m, rate, ctx.run->tasks.size());
  spdlog::info("{}", line);
  if (self->state.step % ctx.run->cfg.run.checkpoint_every == 0 ||
      self->state.step >= ctx.run->cfg.run.max_steps) {
    if (auto st = save(self, ctx); !st) spdlog::error("learner: {}", st.message());
  }
  if (ctx.observer) self->send(ctx.observer, step_atom::value, self->state.step, line);
}

void tick(learner_actor* self, const runtime::role_context& ctx) {
  const auto& cfg = ctx.run->cfg;
  if (self->state.stopping || self->state.step >= cfg.run.max_steps) return;
  if (!self->state.replay) {
    self->delayed_send(self, 200ms, tick_atom::value);
    return;
  }
  int32_t need =
      static_cast<int32_t>(cfg.learner.groups_per_step - static_cast<int64_t>(self->state.pending.size()));
  self->request(self->state.replay, 30s, groups_atom::value, self->state.version, need)
      .then(
          [=](group_batch& batch) {
            if (self->state.candidates_at_start < 0) self->state.candidates_at_start = batch.candidates_total;
            if (batch.dropped_stale > 0)
              spdlog::info("learner: {} groups older than max_staleness dropped", batch.dropped_stale);
            for (auto& g : batch.groups) self->state.pending.push_back(std::move(g));
            if (static_cast<int64_t>(self->state.pending.size()) >= ctx.run->cfg.learner.groups_per_step) {
              train(self, ctx, batch);
              self->send(self, tick_atom::value);
            } else {
              self->delayed_send(self, 250ms, tick_atom::value);
            }
          },
          [=](caf::error& err) {
            spdlog::warn("learner: replay buffer did not answer ({}); retrying", caf::to_string(err));
            self->delayed_send(self, 500ms, tick_atom::value);
          });
}

caf::behavior learner(learner_actor* self, runtime::role_context ctx) {
  runtime::log_failures(self, "learner #" + std::to_string(ctx.index));
  const auto& cfg = ctx.run->cfg;
  auto seed = static_cast<uint64_t>(cfg.run.seed);
  self->state.policy = std::make_unique<policies::program_policy>(cfg.section<policy_section>(), seed);
  // Log-probs are recomputed at the temperature the generators sampled at, so fresh ratios start at 1.
  policies::grpo_config grpo = cfg.section<grpo_section>();
  grpo.temperature = cfg.section<generator_section>().temperature;
  self->state.trainer = std::make_unique<policies::grpo_trainer>(*self->state.policy, grpo, seed + 1);
  if (ctx.run->resume) {
    auto c = runtime::load_latest_checkpoint(ctx.run->path("checkpoints"));
    if (!c) {
      spdlog::warn("learner: {}; starting from fresh weights", c.message());
    } else if (auto st = self->state.trainer->load_state(c->state); !st) {
      spdlog::error("learner: checkpoint does not load ({}); starting from fresh weights", st.message());
    } else {
      self->state.step = c->step;
      self->state.version = c->policy_version;
      self->state.wall_offset = c->wall_s;
      spdlog::info("learner: resumed at step {} (policy v{})", c->step, c->policy_version);
    }
    // The steps after the checkpoint are trained again (their groups are queued again by the replay buffer):
    // their old lines go aside, so metrics.jsonl has one line per step.
    auto moved = runtime::roll_back_metrics(ctx.run->path("metrics.jsonl"), self->state.step,
                                            ctx.run->path("metrics.rolled_back.jsonl"));
    if (!moved)
      spdlog::error("learner: {}", moved.message());
    else if (*moved > 0)
      spdlog::info(
          "learner: {} metric lines after step {} moved to metrics.rolled_back.jsonl (their training "
          "was not checkpointed and is done again)",
          *moved, self->state.step);
  }
  publish(self, ctx);
  self->send(ctx.supervisor, pool_atom::value);  // subscribe to pools: we need the replay buffer
  self->send(self, tick_atom::value);
  return {
      [=](pool_atom, const std::string& role, const std::vector<caf::actor>& members) {
        if (role == "replay_buffer") self->state.replay = members.empty() ? caf::actor{} : members.front();
      },
      [=](tick_atom) { tick(self, ctx); },
      [=](checkpoint_atom) -> caf::result<int64_t> {
        if (auto st = save(self, ctx); !st) return caf::make_error(caf::sec::runtime_error, st.message());
        return self->state.step;
      },
      [=](stop_atom) { self->state.stopping = true; },
      [=](status_atom) {
        status_report s;
        s.step = self->state.step;
        s.policy_version = self->state.version;
        return s;
      },
  };
}

}  // namespace

caf::actor spawn_learner(caf::actor_system& sys, const runtime::role_context& ctx) {
  // Detached: a GRPO step blocks its thread.
  return sys.spawn<caf::detached>(learner, ctx);
}

}  // namespace crucible::actors
