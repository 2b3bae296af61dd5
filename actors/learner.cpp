#include <filesystem>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/options/generator_section.hpp"
#include "actors/options/grpo_section.hpp"
#include "actors/options/policy_section.hpp"
#include "actors/options/self_supervised_section.hpp"
#include "actors/policy_options_of.hpp"
#include "actors/roles.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/type_ids.hpp"
#include "policies/policy_factory.hpp"
#include "runtime/hosting/actor_failures.hpp"
#include "runtime/hosting/fail_points.hpp"
#include "runtime/pipeline/training_stages.hpp"
#include "runtime/storage/checkpoints.hpp"
#include "runtime/storage/metrics_log.hpp"
#include "runtime/storage/tensorboard_log.hpp"

namespace crucible::actors {
namespace {

using namespace std::chrono_literals;

struct learner_state {
  std::unique_ptr<policies::policy> policy;
  std::unique_ptr<policies::policy_learner> trainer;
  policies::learning_objective objective = policies::learning_objective::grpo;
  std::unique_ptr<runtime::plateau_watch> plateau;  // the self-supervised stage's end
  std::optional<runtime::tensorboard_log> tb;       // RUN_DIR/tb (none when it cannot be written)
  int64_t step = 0;
  int64_t version = 0;
  double wall_offset = 0.0;  // wall time of the runs this one resumes
  int64_t candidates_at_start = -1;
  double last_reward = 0.0;  // the last step's mean reward and staleness, for status reports
  double last_staleness = 0.0;
  std::vector<scored_group> pending;
  caf::actor replay;
  bool stopping = false;
  static inline const char* name = "learner";
};

using learner_actor = caf::stateful_actor<learner_state>;

// Weights above policy.max_weights_message_mb go to generators as a file in the run directory (the last four
// versions kept: a generator busy with a long sample loads the newest it was told of when it is done).
void publish(learner_actor* self, const runtime::role_context& ctx) {
  namespace fs = std::filesystem;
  weights_update w;
  w.version = self->state.version;
  w.policy = policies::wire_name(self->state.policy->kind());
  w.bytes = self->state.policy->save_weights();
  w.created_unix = runtime::unix_now();
  const double limit = ctx.run->cfg.section<policy_section>().max_weights_message_mb * 1024.0 * 1024.0;
  if (static_cast<double>(w.bytes.size()) > limit) {
    const fs::path dir = ctx.run->path("weights");
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path file = dir / ("v" + std::to_string(w.version) + ".weights");
    {
      std::ofstream out(file.string() + ".tmp", std::ios::binary | std::ios::trunc);
      out.write(w.bytes.data(), static_cast<std::streamsize>(w.bytes.size()));
      if (!out) {
        spdlog::error("learner: cannot write {}; weights v{} not published", file.string(), w.version);
        return;
      }
    }
    fs::rename(file.string() + ".tmp", file, ec);
    // Generators load the newest file they were told of before each sample: a few versions back is enough.
    fs::remove(dir / ("v" + std::to_string(w.version - 4) + ".weights"), ec);
    w.bytes.clear();
    w.path = file.string();
  }
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

// The self-supervised stage trains on correctness alone: 1 for a candidate that passed (correct, no hack
// verdict), 0 otherwise. The stored rewards are left as measured.
std::vector<scored_group> with_correctness_rewards(std::vector<scored_group> groups) {
  for (auto& g : groups)
    for (auto& c : g.members) c.reward = kernels::has_outcome(c.judged, kernels::outcome::pass) ? 1.0 : 0.0;
  return groups;
}

void train(learner_actor* self, const runtime::role_context& ctx, const group_batch& last) {
  auto stats =
      self->state.objective == policies::learning_objective::reinforce
          ? self->state.trainer->step(with_correctness_rewards(self->state.pending), ctx.run->task_by_name)
          : self->state.trainer->step(self->state.pending, ctx.run->task_by_name);
  if (!stats) {
    spdlog::error("learner: step {} failed: {}", self->state.step + 1, stats.message());
    self->state.pending.clear();
    return;
  }
  ++self->state.step;
  ++self->state.version;
  publish(self, ctx);
  auto m = measure(self, ctx, last, *stats);
  self->state.last_reward = m.reward_mean;
  self->state.last_staleness = m.staleness_mean;
  self->state.pending.clear();
  runtime::append_metrics(ctx.run->path("metrics.jsonl"), m);
  if (self->state.tb) {
    if (auto st = self->state.tb->append(m); !st) {
      spdlog::error("learner: {}; TensorBoard scalars stop here (metrics.jsonl goes on)", st.message());
      self->state.tb.reset();
    }
  }
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
  if (self->state.plateau && self->state.plateau->add(m.correct_rate) && ctx.observer) {
    spdlog::info("learner: the correct rate has plateaued at {:.3f}; the stage ends",
                 self->state.plateau->best());
    self->send(ctx.observer, stop_atom::value,
               std::string("the correct rate has plateaued (best mean ") +
                   std::to_string(self->state.plateau->best()) + ")");
  }
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
  auto options = policy_options_of(cfg, true);
  auto made = options ? policies::make_policy(*options, seed)
                      : expected<std::unique_ptr<policies::policy>>(options.err());
  if (!made) {
    // Nothing to train: the run cannot go on, and says why rather than wait for its time budget.
    spdlog::error("learner: {}", made.message());
    if (ctx.observer)
      self->send(ctx.observer, stop_atom::value, "the learner has no policy: " + made.message());
    return {[=](status_atom) { return status_report{}; }};
  }
  self->state.policy = std::move(*made);
  self->state.objective = objective_of(cfg);
  // Log-probs are recomputed at the temperature the generators sampled at, so fresh ratios start at 1.
  policies::grpo_config grpo = cfg.section<grpo_section>();
  grpo.temperature = cfg.section<generator_section>().temperature;
  auto trainer = policies::make_learner(*self->state.policy, grpo, self->state.objective, seed + 1);
  if (!trainer) {
    spdlog::error("learner: {}", trainer.message());
    if (ctx.observer)
      self->send(ctx.observer, stop_atom::value, "the learner cannot train: " + trainer.message());
    return {[=](status_atom) { return status_report{}; }};
  }
  self->state.trainer = std::move(*trainer);
  if (self->state.objective == policies::learning_objective::reinforce) {
    const auto& ss = cfg.section<self_supervised_section>();
    self->state.plateau = std::make_unique<runtime::plateau_watch>(ss.plateau_steps, ss.min_gain);
  }
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
  if (auto tb = runtime::tensorboard_log::open(ctx.run->path("tb"), ctx.run->resume ? self->state.step : 0))
    self->state.tb.emplace(std::move(*tb));
  else
    spdlog::error("learner: {}; no TensorBoard scalars for this run", tb.message());
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
        s.reward_mean = self->state.last_reward;
        s.staleness_mean = self->state.last_staleness;
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
