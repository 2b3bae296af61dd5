#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/options/generator_section.hpp"
#include "actors/options/policy_section.hpp"
#include "actors/roles.hpp"
#include "kernels/program/emit_source.hpp"
#include "messages/content_hash.hpp"
#include "messages/type_ids.hpp"
#include "policies/program_policy.hpp"
#include "runtime/config/run_context.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::actors {
namespace {

struct generator_state {
  std::unique_ptr<policies::program_policy> policy;
  int64_t version = 0;
  uint64_t seed = 0;
  static inline const char* name = "generator";
};

caf::behavior generator(caf::stateful_actor<generator_state>* self, runtime::role_context ctx) {
  runtime::log_failures(self, "generator #" + std::to_string(ctx.index));
  const auto& cfg = ctx.run->cfg;
  // Each generator samples its own stream; weights arrive from the learner (version 0 until then is the
  // same initialisation the learner starts from, since both use run.seed).
  self->state.policy = std::make_unique<policies::program_policy>(cfg.section<policy_section>(),
                                                                  static_cast<uint64_t>(cfg.run.seed));
  self->state.seed =
      static_cast<uint64_t>(cfg.run.seed) * 1000003u + static_cast<uint64_t>(ctx.index) * 7919u;
  auto run = ctx.run;
  return {
      [=](const weights_update& w) {
        if (w.version <= self->state.version && self->state.version != 0) return;
        if (auto st = self->state.policy->load_weights(w.bytes); !st) {
          spdlog::error("generator #{}: weights v{} rejected: {}", ctx.index, w.version, st.message());
          return;
        }
        self->state.version = w.version;
      },
      [=](generate_atom, const prompt& p) -> caf::result<std::vector<candidate>> {
        auto samples = self->state.policy->sample(
            p, p.group_size, run->cfg.section<generator_section>().temperature, self->state.seed++);
        if (!samples) return caf::make_error(caf::sec::invalid_argument, samples.message());
        std::vector<candidate> out;
        double now = runtime::unix_now();
        for (size_t i = 0; i < samples->size(); ++i) {
          auto& s = (*samples)[i];
          candidate c;
          c.id = p.group_id + "-" + std::to_string(i);
          c.group_id = p.group_id;
          c.task = p.task.name;
          c.target = p.target;
          c.language = p.target == "cuda" ? "cu" : "cpp";
          c.program = s.program_text;
          auto src = kernels::emit_source(p.target, p.task, s.prog);
          // An emitter failure is the emitter's bug, not the policy's: it surfaces as a compile error with
          // the reason, so it is visible and scored, never silently dropped.
          c.source = src ? std::move(*src) : std::string("#error emitter failed: ") + src.message() + "\n";
          c.content_hash = sha256_hex(c.source);
          c.policy_version = self->state.version;
          c.tokens = std::move(s.tokens);
          c.logprobs = std::move(s.logprobs);
          c.context = std::move(s.context);
          c.created_unix = now;
          out.push_back(std::move(c));
        }
        return out;
      },
  };
}

}  // namespace

caf::actor spawn_generator(caf::actor_system& sys, const runtime::role_context& ctx) {
  return sys.spawn<caf::detached>(generator, ctx);
}

}  // namespace crucible::actors
