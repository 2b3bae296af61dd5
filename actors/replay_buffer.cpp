#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/roles.hpp"
#include "messages/type_ids.hpp"
#include "runtime/hosting/actor_failures.hpp"
#include "runtime/storage/checkpoints.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::actors {
namespace {

struct replay_state {
  std::unique_ptr<runtime::replay_store> store;
  static inline const char* name = "replay_buffer";
};

caf::behavior replay_buffer(caf::stateful_actor<replay_state>* self, runtime::role_context ctx) {
  runtime::log_failures(self, "replay_buffer #" + std::to_string(ctx.index));
  const auto& cfg = ctx.run->cfg;
  runtime::replay_options options{cfg.replay.bucket_edges, cfg.replay.temperature, cfg.async.max_staleness};
  options.refine_turns = cfg.replay.refine_turns;
  options.target = cfg.target;
  // A resumed learner restarts from its last checkpoint's weights (fresh ones without a checkpoint): what it
  // trained after that is lost with the killed process, so those groups are trained again.
  if (ctx.run->resume) {
    auto c = runtime::load_latest_checkpoint(ctx.run->path("checkpoints"));
    options.untrain_from_version = c ? c->policy_version : 0;
  }
  auto store = runtime::replay_store::open(ctx.run->path("replay.sqlite"), options,
                                           static_cast<uint64_t>(cfg.run.seed) + 17);
  if (!store) {
    spdlog::error("replay_buffer: {}", store.message());
    self->quit(caf::make_error(caf::sec::runtime_error, store.message()));
    return {};
  }
  self->state.store = std::make_unique<runtime::replay_store>(std::move(*store));
  spdlog::info("replay_buffer: {} candidates stored, {} groups pending",
               self->state.store->candidates_total(), self->state.store->pending_groups());
  if (auto n = self->state.store->untrained(); n > 0)
    spdlog::info("replay_buffer: {} groups trained after the checkpoint (policy v{}) are queued again", n,
                 options.untrain_from_version);
  int exemplars = static_cast<int>(cfg.replay.exemplars);
  return {
      [=](insert_atom, const scored_group& g) -> caf::result<int64_t> {
        auto r = self->state.store->insert(g);
        if (!r) return caf::make_error(caf::sec::runtime_error, r.message());
        if (r->duplicates > 0)
          spdlog::warn("replay_buffer: group {}: {} duplicate candidates ignored", g.group_id, r->duplicates);
        return r->inserted;
      },
      [=](record_atom, const scored_group& g) -> caf::result<int64_t> {
        auto r = self->state.store->record(g);
        if (!r) {
          spdlog::error("replay_buffer: {}", r.message());
          return caf::make_error(caf::sec::runtime_error, r.message());
        }
        return *r;
      },
      [=](restore_atom) {
        group_batch in_flight;
        in_flight.groups = self->state.store->in_flight();
        in_flight.candidates_total = self->state.store->candidates_total();
        in_flight.speedup_best = self->state.store->speedup_best();
        return in_flight;
      },
      [=](exemplar_atom, prompt p) {
        p.exemplars = self->state.store->exemplars(p.task.name, exemplars);
        p.attempts = self->state.store->attempts(p.task.name);
        return p;
      },
      [=](groups_atom, int64_t learner_version, int32_t n) {
        return self->state.store->take_groups(learner_version, n);
      },
      [=](status_atom) {
        status_report s;
        s.candidates_scored = self->state.store->candidates_total();
        s.speedup_best = self->state.store->speedup_best();
        return s;
      },
  };
}

}  // namespace

caf::actor spawn_replay_buffer(caf::actor_system& sys, const runtime::role_context& ctx) {
  // Detached: SQLite commits block on the disk.
  return sys.spawn<caf::detached>(replay_buffer, ctx);
}

}  // namespace crucible::actors
