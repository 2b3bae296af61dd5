#include <caf/all.hpp>

#include "actors/options/verifier_section.hpp"
#include "actors/roles.hpp"
#include "kernels/verify/judge.hpp"
#include "messages/type_ids.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::actors {
namespace {

caf::behavior verifier(caf::event_based_actor* self, runtime::role_context ctx) {
  runtime::log_failures(self, "verifier #" + std::to_string(ctx.index));
  kernels::judge_options options = ctx.run->cfg.section<verifier_section>();
  return {
      [=](stage_atom, stage_request& req) {
        auto& s = req.scored;
        s.judged = kernels::judge(s.cand, s.compiled, s.bench, options);
        return std::move(s);
      },
  };
}

}  // namespace

caf::actor spawn_verifier(caf::actor_system& sys, const runtime::role_context& ctx) {
  return sys.spawn(verifier, ctx);
}

}  // namespace crucible::actors
