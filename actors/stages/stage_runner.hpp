#pragma once
// Runs a config's training stages (stages: [sft, self_supervised, contrastive]) in order, each a run of its
// own in RUN_DIR/stages/<name>/ (runtime/pipeline/training_stages): the sft stage's corpus is a
// program-policy run (RUN_DIR/stages/sft/corpus/), then its supervised training (sft_stage); the
// self-supervised and contrastive stages are language-model runs that start from the model the stage before
// them ended with (RUN_DIR/stages/<name>/model/). Killed at any point, the same command with --resume
// continues the stage it was in; RUN_DIR/stages.json lists the stages that are done. Each stage ends with
// its figures (stage_report) on the terminal and in RUN_DIR/stages/<name>/report.json.
#include <memory>

#include "runtime/config/run_context.hpp"
#include "runtime/hosting/role_registry.hpp"

namespace crucible::actors {

/// The process's exit code: 0 when every stage ran to its end (or its budget), 2 when one could not run.
int run_stages(const runtime::run_context& top, std::shared_ptr<const runtime::role_registry> registry);

}  // namespace crucible::actors
