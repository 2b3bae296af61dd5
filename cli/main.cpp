// crucible: train | eval | tasks | rejudge | report | show | export | node | status | scale. Thin by design:
// parse arguments, register the built-in roles and the KernelBench task loader, hand over.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "runtime/config/run_context.hpp"
#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/python/kernelbench_suite.hpp"
#endif

int main(int argc, char** argv) {
#ifdef CRUCIBLE_WITH_PYTHON
  crucible::runtime::set_kernelbench_task_loader(
      crucible::kernels::load_kernelbench_tasks);  // tasks.kernelbench_dir
#endif
  CLI::App app{"Crucible: contrastive RL that learns to write fast kernels, with speedups you can believe"};
  app.require_subcommand(1);

  crucible::cli::train_args train;
  auto* t = app.add_subcommand("train", "train the policy (default config: the embedded configs/local.yaml)");
  t->add_option("--config", train.config_path, "YAML config file");
  t->add_option("--set", train.overrides, "override a config key: --set grpo.lr=5e-4 (repeatable)");
  t->add_option("--resume", train.resume_dir,
                "continue the run in this run directory from its last checkpoint");
  t->add_flag("--print-config", train.print_config, "print the resolved config and exit");
  t->add_flag("--dry-run", train.dry_run,
              "print the resolved config and the placement plan (which process runs which actors on which "
              "device), start nothing");

  crucible::cli::eval_args eval;
  auto* e = app.add_subcommand("eval", "compile, check and time one candidate against the eager reference");
  auto* task_opt = e->add_option("--task", eval.task, "task name (see `crucible tasks`)");
  auto* kb_opt = e->add_option("--kernelbench", eval.kernelbench,
                               "a KernelBench problem file (Model, get_inputs, get_init_inputs) as the task; "
                               "the candidate is then a Python file with ModelNew");
  task_opt->excludes(kb_opt);
  e->add_option("--candidate", eval.candidate_path,
                "candidate source file (.cpp for the CPU target, .cu for CUDA, .py with --kernelbench)")
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
  l->add_flag("--lint", tasks.lint,
              "run the task linter and measure each task's eager time (with --kernelbench: its checks on "
              "outputs, on the CPU)");
  l->add_option(
      "--kernelbench", tasks.kernelbench,
      "a KernelBench checkout: list its problems (levelN/ID_Name.py) with their inputs and eager times");
  l->add_option("--level", tasks.level, "with --kernelbench: only this level (1-4)");
  l->add_option("--device", tasks.device, "with --kernelbench: cpu or cuda (default: cuda when available)");
  l->add_option("--runs", tasks.runs, "with --kernelbench: timed forward passes per problem (median)");

  crucible::cli::rejudge_args rejudge;
  auto* rj = app.add_subcommand(
      "rejudge",
      "published KernelBench kernels through the evaluation protocol: claimed vs measured speedups");
  rj->add_option(
      "input", rejudge.input,
      "CUDA-L1's release (JSON lines: level_id, task_id, ref_code, custom_code, score_*) or a folder "
      "of solutions (levelN/ID_Name.py, level_N_problem_ID*.py)");
  rj->add_option("--kernelbench", rejudge.kernelbench,
                 "a KernelBench checkout: the problems of a folder's solutions");
  rj->add_flag("--aa", rejudge.self_check,
               "A/A: each problem of --kernelbench submitted as its own candidate (no input)");
  rj->add_option("--level", rejudge.level, "only this level (1-4)");
  rj->add_option("--limit", rejudge.limit, "only the first N kernels");
  rj->add_option("--ids", rejudge.ids, "only these problem ids (e.g. 19,23,40), with --level for one level")
      ->delimiter(',');
  rj->add_option("--target", rejudge.target, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  rj->add_option("--device", rejudge.device, "CUDA device (default: the config's cuda.devices[0])");
  rj->add_option("--json", rejudge.json_path, "write the table and summary as JSON to this file");
  rj->add_option("--markdown", rejudge.markdown_path, "write them as Markdown to this file (also on stdout)");
  rj->add_flag(
      "--resume", rejudge.resume,
      "go on from --json's report (a run cut short, or one spread over several sessions): its kernels "
      "are kept, the rest judged");
  rj->add_option("--sft-jsonl", rejudge.sft_jsonl_path,
                 "write the kernels that pass as the sft stage's corpus (sft.jsonl: task, code, speedup)");
  rj->add_option("--config", rejudge.config_path, "config for compiler.* and benchmark.* settings");
  rj->add_option("--set", rejudge.overrides, "override a config key (repeatable)");

  crucible::cli::report_args report;
  auto* r = app.add_subcommand(
      "report", "what a run learned: rewards early and late, per-task progress, best speedups");
  r->add_option("run_dir", report.run_dir, "run directory (run.dir of the run)")->required();
  auto* report_json = r->add_flag("--json", report.json, "the report as one JSON object");
  auto* report_csv =
      r->add_flag("--csv", report.csv, "the per-step metrics (metrics.jsonl) as CSV")->excludes(report_json);
  r->add_option("--html", report.html, "write a self-contained HTML report with its charts to FILE")
      ->type_name("FILE")
      ->excludes(report_json)
      ->excludes(report_csv);

  crucible::cli::show_args show;
  auto* sh =
      app.add_subcommand("show", "a run's kernels: each task's best, a task's candidates, one in full");
  sh->add_option("run_dir", show.run_dir, "run directory (run.dir of the run)")->required();
  sh->add_option("--task", show.task, "only this task");
  sh->add_flag("--best", show.best, "the best verified candidate of each task (or of --task), in full");
  sh->add_option("--candidate", show.candidate_id, "this candidate, in full");
  sh->add_flag("--json", show.json, "as JSON: the measurements, verdict and source");

  crucible::cli::export_args exp;
  auto* ex =
      app.add_subcommand("export", "write each task's best verified kernel as a file with a JSON sidecar");
  ex->add_option("run_dir", exp.run_dir, "run directory (run.dir of the run)")->required();
  ex->add_option("out_dir", exp.out_dir, "folder to write into (created if missing)")->required();

  crucible::cli::node_args node;
  auto* n =
      app.add_subcommand("node", "join a head and serve pipeline stages (compile, benchmark, verify, ...)");
  n->add_option("--config", node.config_path, "YAML config file (the cluster's)");
  n->add_option("--set", node.overrides, "override a config key (repeatable)");
  n->add_option("--join", node.join, "the head's endpoint, tcp://HOST:PORT (default: cluster.join)");
  n->add_option("--roles", node.roles, "roles to serve: compiler,benchmarker or compiler=2,benchmarker=1");
  n->add_option("--devices", node.devices, "CUDA devices for this node's benchmarkers, e.g. 0,1");
  n->add_option("--node-id", node.node_id, "this node's name (default: host-pid)");

  crucible::cli::control_args status;
  auto* st = app.add_subcommand("status", "a running head's status: roles, nodes, queues, throughput");
  st->add_option("--connect", status.connect, "the head's endpoint, tcp://HOST:PORT")->required();
  st->add_option("--config", status.config_path,
                 "config with the CURVE key files (cluster.secret_key, server_key)");
  st->add_option("--set", status.overrides, "override a config key (repeatable)");
  st->add_option("--timeout", status.timeout_s, "seconds to wait for the answer (default 5)");
  st->add_flag("--json", status.json, "print the status_report as JSON");

  crucible::cli::control_args scale;
  auto* sc = app.add_subcommand("scale", "change how many actors of a role a running head has");
  sc->add_option("--connect", scale.connect, "the head's endpoint, tcp://HOST:PORT")->required();
  sc->add_option("--role", scale.role, "the role, e.g. benchmarker")->required();
  sc->add_option("--count", scale.count, "the head's members of the role (with --node: 0 drains the node)")
      ->required()
      ->check(CLI::NonNegativeNumber);
  sc->add_option("--node", scale.node, "a node (its id, or its peer id) instead of the head");
  sc->add_option("--config", scale.config_path, "config with the CURVE key files");
  sc->add_option("--set", scale.overrides, "override a config key (repeatable)");
  sc->add_option("--timeout", scale.timeout_s, "seconds to wait for the answer (default 5)");
  sc->add_flag("--json", scale.json, "print the status_report after the change as JSON");

  crucible::cli::keygen_args keygen;
  auto* k =
      app.add_subcommand("keygen", "make a CURVE key pair for the cluster (cluster.secret_key and friends)");
  k->add_option("--secret", keygen.secret_path, "file for the key pair (created with mode 0600)")->required();
  k->add_option("--public", keygen.public_path, "file for the public key alone");

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
  if (*sh) return crucible::cli::show_command(show);
  if (*ex) return crucible::cli::export_command(exp);
  if (*rj) return crucible::cli::rejudge_command(rejudge);
  if (*n) return crucible::cli::node_command(node);
  if (*k) return crucible::cli::keygen_command(keygen);
  if (*st) return crucible::cli::status_command(status);
  if (*sc) return crucible::cli::scale_command(scale);
  return 2;
}
