#include <caf/all.hpp>

#include "actors/roles.hpp"
#include "kernels/verify/judge.hpp"
#include "messages/type_ids.hpp"
#include "runtime/actor_failures.hpp"

namespace crucible::actors {
namespace {

caf::behavior verifier(caf::event_based_actor* self, runtime::role_context ctx) {
  runtime::log_failures(self, "verifier #" + std::to_string(ctx.index));
  auto options = ctx.run->cfg.verifier;
  return {
      [=](verify_atom, const candidate& c, const compile_result& compiled, const bench_result& bench) {
        return kernels::judge(c, compiled, bench, options);
      },
  };
}

}  // namespace

caf::actor spawn_verifier(caf::actor_system& sys, const runtime::role_context& ctx) {
  return sys.spawn(verifier, ctx);
}

}  // namespace crucible::actors
