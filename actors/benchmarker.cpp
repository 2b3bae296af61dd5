#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/options/benchmark_section.hpp"
#include "actors/roles.hpp"
#include "kernels/eval/worker_client.hpp"
#include "messages/type_ids.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::actors {
namespace {

struct benchmarker_state {
  std::unique_ptr<kernels::bench_runner> runner;
  static inline const char* name = "benchmarker";
};

caf::behavior benchmarker(caf::stateful_actor<benchmarker_state>* self, runtime::role_context ctx) {
  runtime::log_failures(self, "benchmarker #" + std::to_string(ctx.index));
  const auto& cfg = ctx.run->cfg;
  auto worker = cfg.section<benchmark_section>().worker;
  if (!worker.log_path.empty()) worker.log_path += "." + std::to_string(ctx.index);
  // CUDA: one worker process per benchmarker, benchmarkers spread over the configured devices.
  if (cfg.target == "cuda" && !cfg.cuda.devices.empty())
    worker.device =
        static_cast<int>(cfg.cuda.devices[static_cast<size_t>(ctx.index) % cfg.cuda.devices.size()]);
  self->state.runner =
      std::make_unique<kernels::bench_runner>(worker, cfg.section<benchmark_section>().runner);
  auto run = ctx.run;
  return {
      [=](stage_atom, stage_request& work) -> scored_candidate {
        auto& s = work.scored;
        const auto& c = s.cand;
        bench_result& r = s.bench;
        r = bench_result{};
        r.candidate_id = c.id;
        r.task = c.task;
        auto task = run->task_by_name.find(c.task);
        if (!s.compiled.ok || task == run->task_by_name.end()) {
          r.status = "error";
          r.error = !s.compiled.ok ? "not compiled" : "unknown task '" + c.task + "'";
          return std::move(s);
        }
        eval_request req;
        req.candidate_id = c.id;
        req.task = task->second;
        req.artifact = s.compiled.artifact;
        req.options = run->cfg.section<benchmark_section>().eval;
        req.target = run->cfg.target;
        r = self->state.runner->run(req, work.best_seen);
        return std::move(s);
      },
      [=](pid_atom) { return static_cast<int32_t>(self->state.runner->worker().pid()); },
  };
}

}  // namespace

caf::actor spawn_benchmarker(caf::actor_system& sys, const runtime::role_context& ctx) {
  // Detached: an evaluation blocks on the worker process for up to benchmark.timeout_s.
  return sys.spawn<caf::detached>(benchmarker, ctx);
}

}  // namespace crucible::actors
