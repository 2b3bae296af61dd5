#include "actors/stages/stage_runner.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "actors/options/generator_section.hpp"
#include "actors/options/grpo_section.hpp"
#include "actors/options/policy_section.hpp"
#include "actors/options/self_supervised_section.hpp"
#include "actors/options/sft_section.hpp"
#include "actors/policy_options_of.hpp"
#include "actors/stages/sft_stage.hpp"
#include "actors/stages/stage_report.hpp"
#include "policies/policy_factory.hpp"
#include "runtime/hosting/train_session.hpp"
#include "runtime/pipeline/training_stages.hpp"
#include "runtime/storage/checkpoints.hpp"

namespace crucible::actors {
namespace {

namespace fs = std::filesystem;
using runtime::training_stage;

constexpr const char* interrupted_note = "interrupted";

// One run of the stage's own: resumed when its directory holds one, skipped when it already reached its
// step budget.
status run_sub(const runtime::config& cfg, std::shared_ptr<const runtime::role_registry> registry) {
  const bool resume = fs::exists(fs::path(cfg.run.dir) / "config.yaml");
  if (resume) {
    auto ck = runtime::load_latest_checkpoint(cfg.run.dir + "/checkpoints");
    if (ck && ck->step >= cfg.run.max_steps) return {};
  }
  auto run = runtime::prepare_run(cfg, resume);
  if (!run) return run.err();
  std::printf("%s: %zu tasks, run directory %s%s\n", cfg.stages.front().c_str(), (*run)->tasks.size(),
              (*run)->dir.c_str(), resume ? " (resumed)" : "");
  std::fflush(stdout);
  auto summary = runtime::run_training(*run, std::move(registry));
  if (!summary) return summary.err();
  const auto& c = summary->conductor;
  std::printf(
      "%s: %s after %lld learner steps in %.0f s: %lld candidates generated, %lld scored, %lld abandoned, "
      "%lld lost\n",
      cfg.stages.front().c_str(),
      summary->interrupted            ? "interrupted"
      : !summary->ended_early.empty() ? ("ended early (" + summary->ended_early + ")").c_str()
      : summary->timed_out            ? "time budget spent"
                                      : "done",
      static_cast<long long>(summary->steps), summary->wall_s, static_cast<long long>(c.candidates_generated),
      static_cast<long long>(c.candidates_scored), static_cast<long long>(c.candidates_abandoned),
      static_cast<long long>(c.candidates_in_flight));
  std::fflush(stdout);
  if (summary->interrupted) return make_error(interrupted_note);
  if (!summary->ended_early.empty() && summary->ended_early.rfind("the learner", 0) == 0)
    return make_error(summary->ended_early);
  return {};
}

// The weights a language-model stage ended with, as a model directory the next stage starts from.
status export_model(const runtime::config& cfg, const std::string& dir) {
  auto ck = runtime::load_latest_checkpoint(cfg.run.dir + "/checkpoints");
  if (!ck) return make_error("no checkpoint to export: " + ck.message());
  auto options = policy_options_of(cfg, true);
  if (!options) return options.err();
  auto policy = policies::make_policy(*options, static_cast<uint64_t>(cfg.run.seed));
  if (!policy) return policy.err();
  auto learner = policies::make_learner(**policy, cfg.section<grpo_section>(), objective_of(cfg), 1);
  if (!learner) return learner.err();
  if (auto st = (*learner)->load_state(ck->state); !st) return st;
  auto* lm = dynamic_cast<policies::lm_policy*>(policy->get());
  if (!lm) return make_error("only a language model is exported");
  return lm->save(dir);
}

void write_report(const std::string& stage_dir, const stage_report& r) {
  std::printf("%s", format_stage_report(r).c_str());
  std::fflush(stdout);
  std::ofstream((fs::path(stage_dir) / "report.json").string(), std::ios::trunc)
      << stage_report_json(r) << "\n";
}

// A stage that did not finish: Ctrl-C is an orderly stop (exit 0, resumable); anything else an error.
int stopped(const runtime::run_context& top, const std::string& stage, const std::string& why) {
  if (why == interrupted_note || why == sft_interrupted_note) {
    std::printf("interrupted in stage %s; `crucible train --resume %s` continues it\n", stage.c_str(),
                top.dir.c_str());
    return 0;
  }
  std::fprintf(stderr, "crucible train: stage %s: %s\n", stage.c_str(), why.c_str());
  return 2;
}

}  // namespace

int run_stages(const runtime::run_context& top, std::shared_ptr<const runtime::role_registry> registry) {
  const auto& cfg = top.cfg;
  auto order = runtime::parse_stage_list(cfg.stages);
  if (!order) {
    std::fprintf(stderr, "crucible train: %s\n", order.message().c_str());
    return 2;
  }
  auto done = runtime::load_stages_done(top.dir, *order);
  if (!done) {
    std::fprintf(stderr, "crucible train: %s\n", done.message().c_str());
    return 2;
  }
  const auto& policy = cfg.section<policy_section>();
  std::string model_dir = policy.lm.checkpoint;  // what the next language-model stage starts from
  const std::string sft_dir = runtime::stage_dir(top.dir, training_stage::sft);
  for (size_t i = 0; i < order->size(); ++i) {
    const training_stage stage = (*order)[i];
    const std::string name = runtime::wire_name(stage), dir = runtime::stage_dir(top.dir, stage);
    const bool finished = std::find(done->begin(), done->end(), stage) != done->end();
    const std::string stage_model = (fs::path(dir) / "model").string();
    if (finished) {
      if (fs::exists(fs::path(stage_model) / "config.json")) model_dir = stage_model;
      std::printf("== stage %zu of %zu: %s (done)\n", i + 1, order->size(), name.c_str());
      continue;
    }
    std::printf("== stage %zu of %zu: %s\n", i + 1, order->size(), name.c_str());
    std::fflush(stdout);
    std::error_code ec;
    fs::create_directories(dir, ec);
    runtime::config sub = cfg;
    sub.stages = {name};
    if (stage == training_stage::sft) {
      // The corpus: a run of sft.corpus_policy (the program policy or a served model) over the same tasks,
      // every candidate evaluated as in any run; none with corpus_policy none (sft.jsonl only).
      const auto& s = cfg.section<sft_section>();
      std::string corpus_db;
      if (s.corpus_policy != "none") {
        sub.run.dir = (fs::path(dir) / "corpus").string();
        sub.stages = {"contrastive"};
        sub.section<policy_section>().kind = s.corpus_policy;
        sub.run.max_steps = s.corpus_steps;
        sub.run.max_minutes = s.corpus_minutes;
        // Its end (steps or budget) is recorded, so a resume goes on to the training, not a longer corpus
        // run.
        const fs::path corpus_done = fs::path(dir) / "corpus.done";
        if (!fs::exists(corpus_done)) {
          if (auto st = run_sub(sub, registry); !st) return stopped(top, name, st.message());
          std::ofstream(corpus_done.string()) << "done\n";
        }
        corpus_db = sub.run.dir + "/replay.sqlite";
      }
      auto sft = run_sft_training(cfg, dir, corpus_db);
      if (!sft) return stopped(top, name, sft.message());
      std::printf("sft: done: %lld steps in %.0f s, loss %.3f -> %.3f; the model is in %s\n",
                  static_cast<long long>(sft->steps), sft->wall_s, sft->loss_first, sft->loss_last,
                  sft->model_dir.c_str());
      model_dir = sft->model_dir;
    } else {
      sub.run.dir = dir;
      if (policy.kind == "lm") {
        if (model_dir.empty()) {
          std::fprintf(stderr,
                       "crucible train: stage %s needs a language model: list sft before it, or set "
                       "policy.lm.checkpoint\n",
                       name.c_str());
          return 2;
        }
        sub.section<policy_section>().lm.checkpoint = model_dir;
      }
      if (stage == training_stage::self_supervised) {
        const auto& ss = cfg.section<self_supervised_section>();
        sub.run.max_steps = ss.max_steps;
        sub.run.max_minutes = ss.max_minutes;
      }
      if (auto st = run_sub(sub, registry); !st) return stopped(top, name, st.message());
      if (policy.kind == "lm") {
        if (auto st = export_model(sub, stage_model); !st) {
          std::fprintf(stderr, "crucible train: stage %s: exporting its model: %s\n", name.c_str(),
                       st.message().c_str());
          return 2;
        }
        model_dir = stage_model;
      }
      if (auto r = measure_stage(name, dir + "/replay.sqlite", sft_source_hashes(sft_dir)))
        write_report(dir, *r);
      else
        spdlog::warn("stage {}: no report: {}", name, r.message());
    }
    if (auto st = runtime::mark_stage_done(top.dir, stage); !st) {
      std::fprintf(stderr, "crucible train: %s\n", st.message().c_str());
      return 2;
    }
  }
  std::printf("stages done: %s\n", top.dir.c_str());
  return 0;
}

}  // namespace crucible::actors
