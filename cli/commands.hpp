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
};
int train_command(const train_args& args);

struct eval_args {
  std::string task;
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
};
int tasks_command(const tasks_args& args);

struct report_args {
  std::string run_dir;
};
int report_command(const report_args& args);

}  // namespace crucible::cli
