// The judge: serves the optional pipeline stage "judge" (pipeline: [compile, benchmark, verify, judge]),
// CUDA-L1's adversarial reward check. Every candidate passes through it after the verifier: a hack the
// verifier confirmed with dynamic evidence joins the case database (so the judge learns cases as the run
// goes), and a passing outlier is reviewed through the configured reviewer against the most similar
// confirmed cases (kernels/verify/outlier_review.hpp). It gives verdicts, so it runs on the head only
// (runtime/pipeline/pipeline_stages).
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/options/judge_section.hpp"
#include "actors/options/verifier_section.hpp"
#include "actors/roles.hpp"
#include "kernels/verify/hack_cases.hpp"
#include "kernels/verify/outlier_review.hpp"
#include "messages/type_ids.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::actors {
namespace {

// One case database per case file in a process: the judges of a run read and grow the same one, and a
// restarted judge reopens what the others persisted.
expected<std::shared_ptr<kernels::hack_case_db>> shared_cases(const runtime::run_context& run) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<kernels::hack_case_db>> open;
  const std::string path = run.path("hack_cases.jsonl");
  std::lock_guard<std::mutex> lock(mu);
  if (auto db = open[path].lock()) return db;
  auto db = kernels::hack_case_db::open(path);
  if (!db) return db.err();
  if ((*db)->skipped_lines() > 0)
    spdlog::warn("judge: {} unreadable lines of {} skipped", (*db)->skipped_lines(), path);
  if (const auto& dir = run.cfg.section<judge_section>().cases_dir; !dir.empty()) {
    auto added = (*db)->seed_from_dir(dir);
    if (!added) return make_error("judge.cases_dir: " + added.message());
    spdlog::info("judge: {} labelled hacks from {} added to the case database", *added, dir);
  }
  open[path] = *db;
  return db;
}

struct judge_state {
  std::shared_ptr<kernels::hack_case_db> cases;
  std::unique_ptr<kernels::reviewer> rev;
  std::string broken;  ///< why this judge cannot review (every request fails with it)
  static inline const char* name = "judge";
};

caf::behavior judge(caf::stateful_actor<judge_state>* self, runtime::role_context ctx) {
  runtime::log_failures(self, "judge #" + std::to_string(ctx.index));
  auto run = ctx.run;
  if (auto db = shared_cases(*run)) {
    self->state.cases = *db;
  } else {
    self->state.broken = db.message();
  }
  if (auto r = kernels::make_reviewer(run->cfg.section<judge_section>())) {
    self->state.rev = std::move(*r);
  } else {
    self->state.broken = r.message();
  }
  if (!self->state.broken.empty()) spdlog::error("judge #{}: {}", ctx.index, self->state.broken);
  return {
      [=](stage_atom, stage_request& req) -> caf::result<scored_candidate> {
        auto& st = self->state;
        scored_candidate s = std::move(req.scored);
        if (!st.broken.empty()) return caf::make_error(caf::sec::runtime_error, "judge: " + st.broken);
        if (auto c = kernels::case_from_verdict(s); c && st.cases->add(*c))
          spdlog::info("judge: learned case {} ({}, task {}) from the verifier's verdict",
                       c->id.substr(0, 12), c->cls, c->task);
        kernels::review_outlier(s, *st.cases, *st.rev, run->cfg.section<judge_section>(),
                                run->cfg.section<verifier_section>().penalty);
        return s;
      },
  };
}

}  // namespace

caf::actor spawn_judge(caf::actor_system& sys, const runtime::role_context& ctx) {
  // Detached: a review scans the source and the artifact's imports and appends to the case file (tens of
  // milliseconds), and a reviewer behind an LM or an endpoint blocks for longer.
  return sys.spawn<caf::detached>(judge, ctx);
}

}  // namespace crucible::actors
