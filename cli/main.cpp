// crucible: train | eval | tasks | report. Thin by design: parse arguments, register the built-in roles, hand
// over.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Crucible: contrastive RL that learns to write fast kernels, with speedups you can believe"};
  app.require_subcommand(1);

  crucible::cli::train_args train;
  auto* t = app.add_subcommand("train", "train the policy (default config: the embedded configs/local.yaml)");
  t->add_option("--config", train.config_path, "YAML config file");
  t->add_option("--set", train.overrides, "override a config key: --set grpo.lr=5e-4 (repeatable)");
  t->add_option("--resume", train.resume_dir,
                "continue the run in this run directory from its last checkpoint");
  t->add_flag("--print-config", train.print_config, "print the resolved config and exit");

  crucible::cli::eval_args eval;
  auto* e = app.add_subcommand("eval", "compile, check and time one candidate against the eager reference");
  e->add_option("--task", eval.task, "task name (see `crucible tasks`)")->required();
  e->add_option("--candidate", eval.candidate_path,
                "candidate source file (.cpp for the CPU target, .cu for CUDA)")
      ->required();
  e->add_option("--target", eval.target, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  e->add_option("--device", eval.device, "CUDA device (default: the config's cuda.devices[0])");
  e->add_option("--tasks-dir", eval.tasks_dir, "task suite directory (default: kernels/tasks)");
  e->add_option("--config", eval.config_path, "config for compiler.* and benchmark.* settings");
  e->add_option("--set", eval.overrides, "override a config key (repeatable)");
  e->add_flag("--json", eval.json, "print one JSON object");

  crucible::cli::tasks_args tasks;
  auto* l = app.add_subcommand("tasks", "list the task suite");
  l->add_option("--target", tasks.target, "cpu or cuda");
  l->add_option("--tasks-dir", tasks.tasks_dir, "task suite directory (default: kernels/tasks)");
  l->add_flag("--lint", tasks.lint, "run the task linter and measure each task's eager time");

  crucible::cli::report_args report;
  auto* r = app.add_subcommand(
      "report", "what a run learned: rewards early and late, per-task progress, best speedups");
  r->add_option("run_dir", report.run_dir, "run directory (run.dir of the run)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    int code = app.exit(err);
    return code == 0 ? 0 : 2;
  }
  if (*t) return crucible::cli::train_command(train);
  if (*e) return crucible::cli::eval_command(eval);
  if (*l) return crucible::cli::tasks_command(tasks);
  if (*r) return crucible::cli::report_command(report);
  return 2;
}
