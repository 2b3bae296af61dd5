#pragma once
// The run configuration: one YAML file (configs/*.yaml) with defaults for every key, `--set key=value`
// overrides, and validation whose errors name the key path and what was expected. Unknown keys are errors,
// so a typo never silently falls back to a default. This file holds the keys of the runtime itself (the
// run, tasks, roles, pipeline, cluster, plugins); the domain's sections (compiler, benchmark, verifier,
// judge, policy, grpo, generator) are registered by actors/options/ and read with cfg.section<T>().
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/config/config_sections.hpp"

namespace crucible::runtime {

struct run_section {
  std::string dir = "runs/local";  ///< run directory: metrics.jsonl, replay.sqlite, checkpoints/, log
  int64_t max_steps = 60;          ///< learner steps; the run ends after the last one
  double max_minutes = 12.0;       ///< wall-clock budget; the run checkpoints and ends when it is spent
  int64_t seed = 1;
  int64_t checkpoint_every = 10;   ///< learner steps between checkpoints (and one at the end)
  std::string log_level = "info";  ///< trace | debug | info | warn | error
  bool progress = true;            ///< a progress line on the terminal per learner step
  double shutdown_grace_s = 20.0;  ///< how long a stop waits for work in flight
  int64_t threads = 0;             ///< CAF scheduler threads (0: number of cores)
  int64_t max_role_count = 256;    ///< most members of a role in one process (roles:, crucible scale)
};

struct tasks_section {
  std::string dir;                   ///< empty: the suite in the source tree (kernels/tasks)
  std::string kernelbench_dir;       ///< a KernelBench checkout whose problems are the tasks (instead of dir)
  int64_t kernelbench_level = 0;     ///< with kernelbench_dir: one level (1-4); 0: every level
  std::vector<std::string> include;  ///< empty: every task of the target
  std::vector<std::string> exclude;
};

struct async_section {
  int64_t max_staleness = 2;     ///< oldest policy version a trained group may come from (0: synchronous)
  int64_t groups_in_flight = 3;  ///< GRPO groups generated/evaluated concurrently
};

struct learner_section {
  int64_t group_size = 8;       ///< G: candidates per prompt
  int64_t groups_per_step = 2;  ///< groups per GRPO update
};

struct replay_section {
  int64_t exemplars = 2;     ///< contrastive exemplars per prompt (CUDA-L1: 2, from distinct buckets)
  double temperature = 1.0;  ///< softmax temperature over bucket mean speedups
  std::vector<double> bucket_edges = {0.5, 0.9, 1.1, 1.5, 3.0};  ///< speedup bucket boundaries
  /// Multi-turn refinement: the task's latest N scored attempts (compile error, failed check, verdict or
  /// speedup) fed back to the policy as turns of the conversation. 0: off.
  int64_t refine_turns = 0;
};

/// The CUDA target (target: cuda). compiler.* then defaults to nvcc for every compiler key the file does not
/// set, and benchmark.memory_mb to 0 (actors/options/compiler_section, benchmark_section).
struct cuda_section {
  std::string arch = "sm_90";  ///< nvcc -arch
  std::string nvcc;            ///< empty: $CRUCIBLE_NVCC, nvcc on PATH, /usr/local/cuda/bin/nvcc
  std::string cudnn_dir;       ///< cuDNN's include/ and lib/ (empty: $CRUCIBLE_CUDNN_DIR, or nvcc's own)
  std::vector<int64_t> devices = {0};  ///< benchmarker i measures on devices[i % size], one worker each
};

struct dispatch_section {
  int64_t max_attempts = 3;      ///< dispatches of one stage before the candidate is scored as an error
  double stage_timeout_s = 180;  ///< a stage answer slower than this counts as a lost actor
};

/// The cluster (docs/cluster.md): a head (`crucible train` with cluster.listen set) and node processes
/// (`crucible node --join`) that serve pipeline stages for it over ZeroMQ (runtime/cluster/wire_head,
/// wire_peer). One file describes both sides; a node reads the node_* keys, the head the rest.
struct cluster_section {
  std::string listen;  ///< the head's endpoint, e.g. tcp://*:5555; empty: everything in one process
  std::string join;    ///< a node's head endpoint (`--join` overrides it)
  int64_t heartbeat_ms = 1000;
  int64_t liveness = 3;  ///< heartbeat intervals of silence after which the other side is dead
  /// CURVE: this process's key file (the head's server key, or a node's client key); empty: no CURVE.
  std::string secret_key;
  std::string server_key;       ///< a node: the head's public key file
  std::string authorized_keys;  ///< the head: the client public keys it admits (a file, or a directory)
  /// The head without CURVE keys: false (the default) listens on loopback only, so no process of another
  /// host can join, serve stages or send control commands; true accepts them unauthenticated (a private
  /// network, a test in network namespaces). runtime/cluster/listen_policy.hpp.
  bool plaintext_remote = false;
  /// What a node runs by default (`--roles` overrides): pipeline roles and their counts. Never verifier or
  /// judge: verdicts are made on the head (runtime/pipeline/pipeline_stages.hpp).
  std::map<std::string, int64_t> node_roles = {{"compiler", 1}, {"benchmarker", 1}};
  std::vector<int64_t> node_devices;  ///< a node's benchmarker devices (empty: cuda.devices); `--devices`
  int64_t nodes = 0;                  ///< node processes a launch starts (the placement plan; Slurm sets it)
};

/// The head's dashboard (docs/dashboard.md): the live page, Prometheus /metrics and the JSON it reads, over
/// HTTP (runtime/dashboard).
struct dashboard_section {
  /// HOST:PORT, loopback by default; "off" (or empty): no dashboard. When the default port is taken (another
  /// run on this host) a free one is used, and the URL printed at start says which.
  std::string listen = "127.0.0.1:8265";
  /// Whether the page's buttons may scale roles: auto (when cluster.secret_key is set), on, or off. A
  /// command needs the run's token as well (RUN_DIR/dashboard_token, in the URL printed at start), and
  /// from another host it is refused as `crucible scale` without CURVE is.
  std::string controls = "auto";
  double refresh_s = 1.0;  ///< how often the page's numbers and /metrics are sampled
};

struct config {
  std::string target = "cpu";
  run_section run;
  tasks_section tasks;
  std::map<std::string, int64_t> roles = {{"conductor", 1},   {"generator", 1}, {"compiler", 2},
                                          {"benchmarker", 1}, {"verifier", 1},  {"replay_buffer", 1},
                                          {"learner", 1}};
  std::vector<std::string> pipeline = {"compile", "benchmark", "verify"};
  /// CUDA-L1's training stages, run in this order (runtime/pipeline/training_stages.hpp): sft,
  /// self_supervised, contrastive. One stage other than sft is one plain run (the default: contrastive).
  std::vector<std::string> stages = {"contrastive"};
  async_section async;
  learner_section learner;
  replay_section replay;
  cuda_section cuda;
  dispatch_section dispatch;
  cluster_section cluster;
  dashboard_section dashboard;
  /// Shared libraries that register roles (runtime/hosting/plugin_api.hpp), loaded before any actor starts.
  std::vector<std::string> plugins;
  /// Each plugin role's own settings (plugin_settings.<role>.<key>: a scalar or a list of scalars, nested
  /// keys flattened to "a.b"); the role reads them as plugin_run_info::settings. Any key is accepted here;
  /// the plugin says what it does not understand.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> plugin_settings;
  /// The registered sections' values (config_sections.hpp). The judge stage (pipeline: [..., verify,
  /// judge]) with no roles.judge in the file runs one judge.
  config_sections sections;

  template <class T>
  const T& section() const {
    return sections.get<T>();
  }
  template <class T>
  T& section() {
    return sections.get<T>();
  }
};

/// Parses YAML text over the defaults, applies `overrides` ("a.b=value", value in YAML syntax), validates.
expected<config> parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                              const std::string& origin = "<config>");

/// Reads a file, then parse_config.
expected<config> load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// The embedded default (configs/local.yaml compiled into the binary).
const std::string& embedded_default_config();
/// configs/gpu.yaml compiled in: what `crucible eval --target cuda` uses without --config.
const std::string& embedded_gpu_config();

/// The resolved config as YAML (every key), for the run directory and --print-config.
std::string to_yaml(const config& c);

/// The number at a key path of the core or of a registered section ("verifier.penalty"), for code that
/// must not include the section's type (a plugin's run view); an error when there is no such number key.
expected<double> config_number(const config& c, const std::string& path);

}  // namespace crucible::runtime
