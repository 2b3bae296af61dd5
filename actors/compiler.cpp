#include <caf/all.hpp>

#include "actors/options/compiler_section.hpp"
#include "actors/roles.hpp"
#include "kernels/eval/compiler.hpp"
#include "messages/type_ids.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::actors {
namespace {

caf::behavior compiler(caf::event_based_actor* self, runtime::role_context ctx) {
  runtime::log_failures(self, "compiler #" + std::to_string(ctx.index));
  kernels::compiler_options options = ctx.run->cfg.section<compiler_section>();
  return {
      [=](stage_atom, stage_request& req) {
        auto& c = req.scored.cand;
        // A KernelBench candidate is a Python module: staged, not compiled.
        req.scored.compiled = c.language == "py" ? kernels::stage_module(c.id, c.source, options)
                                                 : kernels::compile_source(c.id, c.source, options);
        return std::move(req.scored);
      },
  };
}

}  // namespace

caf::actor spawn_compiler(caf::actor_system& sys, const runtime::role_context& ctx) {
  // Detached: a compile blocks for up to compiler.timeout_s and must not stall the scheduler.
  return sys.spawn<caf::detached>(compiler, ctx);
}

}  // namespace crucible::actors
