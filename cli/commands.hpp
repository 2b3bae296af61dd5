#pragma once
// The crucible executable's subcommands. Each returns the process exit code: 0 on success, 2 on a usage
// or input error (with a message on stderr), 1 when a run itself failed.
#include <string>
#include <vector>

namespace crucible::cli {

struct train_args {
  std::string config_path;             ///< empty: the embedded default (configs/local.yaml)
  std::vector<std::string> overrides;  ///< --set key=value
  std::string resume_dir;              ///< --resume RUN_DIR
  bool print_config = false;
  bool dry_run = false;  ///< --dry-run: print the resolved config and the placement plan, start nothing
};
/// Under Slurm (SLURM_PROCID set) with cluster.listen in the config, task 0 is the head and every other
/// task runs the node path (node_command) against it: `srun crucible train --config configs/cluster.yaml`.
int train_command(const train_args& args);

struct eval_args {
  std::string task;
  std::string kernelbench;  ///< a KernelBench problem file as the task (instead of --task)
  std::string candidate_path;
  std::string target = "cpu";
  int device = -1;  ///< CUDA device; -1: the config's cuda.devices[0]
  std::string tasks_dir;
  std::string config_path;
  std::vector<std::string> overrides;
  bool json = false;
};
int eval_command(const eval_args& args);

struct tasks_args {
  std::string target = "cpu";
  std::string tasks_dir;
  bool lint = false;
  std::string kernelbench;  ///< a KernelBench checkout: list its problems with their eager times
  int level = 0;            ///< with kernelbench: one level (0: all)
  std::string device;       ///< with kernelbench: cpu | cuda (default: cuda when available)
  int runs = 5;             ///< with kernelbench: timed forward passes per problem
};
int tasks_command(const tasks_args& args);

struct node_args {
  std::string config_path;  ///< empty: the embedded default
  std::vector<std::string> overrides;
  std::string join;   ///< --join tcp://HOST:PORT (else cluster.join)
  std::string roles;  ///< --roles compiler,benchmarker or compiler=2,benchmarker=1 (else cluster.node_roles)
  std::string devices;  ///< --devices 0,1 (else cluster.node_devices)
  std::string node_id;  ///< --node-id (else host-pid)
};
int node_command(const node_args& args);

struct control_args {
  std::string connect;      ///< --connect tcp://HOST:PORT
  std::string config_path;  ///< for the CURVE key files (cluster.secret_key, cluster.server_key)
  std::vector<std::string> overrides;
  std::string role;  ///< scale
  int count = -1;    ///< scale
  std::string node;  ///< scale --node
  double timeout_s = 5.0;
  bool json = false;
};
int status_command(const control_args& args);
int scale_command(const control_args& args);

struct keygen_args {
  std::string secret_path;  ///< --secret: the key pair (mode 0600; never overwritten)
  std::string public_path;  ///< --public: the public key alone (what the other side lists)
};
int keygen_command(const keygen_args& args);

struct rejudge_args {
  std::string input;        ///< CUDA-L1's JSON lines, or a folder of KernelBench-format solutions
  std::string kernelbench;  ///< a KernelBench checkout (a folder's problems; the A/A run's)
  bool self_check = false;  ///< --aa: each problem's Model as its own candidate
  int level = 0;            ///< 0: every level
  int limit = 0;            ///< 0: every kernel
  std::vector<int> ids;     ///< only these problem ids (empty: all), before --limit
  std::string target = "cpu";
  int device = -1;  ///< CUDA device; -1: the config's cuda.devices[0]
  std::string json_path, markdown_path;
  bool resume = false;         ///< --resume: keep the kernels --json's report already has, judge the rest
  std::string sft_jsonl_path;  ///< the kernels that pass, as sft.jsonl lines (named as training names tasks)
  std::string config_path;
  std::vector<std::string> overrides;
};
/// `crucible rejudge`: published kernels (or, with --aa, each problem against itself) through the evaluation
/// protocol; a table per kernel and a summary, as Markdown on stdout and in the files asked for.
int rejudge_command(const rejudge_args& args);

struct report_args {
  std::string run_dir;
  bool json = false;  ///< the report as one JSON object
  bool csv = false;   ///< metrics.jsonl as CSV, a row per step
  std::string html;   ///< write a self-contained HTML report with charts to this file
};
int report_command(const report_args& args);

struct show_args {
  std::string run_dir;
  std::string task;          ///< only this task's candidates
  bool best = false;         ///< each task's best verified candidate, in full
  std::string candidate_id;  ///< this candidate, in full
  bool json = false;         ///< the sidecar object (plus the source) instead of text
};
/// `crucible show`: a run's kernels — a table of tasks and their best, a task's candidates, or candidates in
/// full (source, program, measurements, verdict).
int show_command(const show_args& args);

struct export_args {
  std::string run_dir;
  std::string out_dir;
};
/// `crucible export`: each task's best verified kernel as a file with a JSON sidecar.
int export_command(const export_args& args);

}  // namespace crucible::cli
