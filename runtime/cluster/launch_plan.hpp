#pragma once
// Launching a cluster from one config file (configs/cluster.yaml): which process a launcher started (the
// head, or a node and the endpoint of the head it joins), and the placement plan (which process runs which
// actors on which device) that `crucible train --dry-run` prints and a head writes to its log.
//
// Slurm is the launcher understood today: `srun crucible train --config configs/cluster.yaml` starts task 0
// as the head and every other task as a node that dials tcp://<first host of the node list>:<port of
// cluster.listen>; examples/slurm/crucible.sbatch is a batch script for it. Without a launcher the process
// is a head and nodes are started by hand (`crucible node --join`).
//
// Pure functions over a config and an environment map (tests pass their own; current_environment() is the
// process's), safe from any thread.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/config/config.hpp"

namespace crucible::runtime {

/// Environment variables by name.
using environment = std::map<std::string, std::string>;

/// This process's environment (environ), for resolve_launch.
environment current_environment();

/// Expands a Slurm host list (SLURM_JOB_NODELIST's compressed syntax): "gpu[01-03,07],cpu5" -> gpu01,
/// gpu02, gpu03, gpu07, cpu5. Zero padding is kept ([08-10] -> 08, 09, 10); several bracket groups in one
/// name multiply, the last varying fastest ("r[1-2]n[1-2]" -> r1n1, r1n2, r2n1, r2n2). Errors (an empty
/// list or name, unbalanced or nested brackets, a range that is not digits or runs backwards, more than
/// 65536 hosts) quote the offending part.
expected<std::vector<std::string>> expand_slurm_hostlist(const std::string& list);

/// Expands Slurm's tasks-per-node text (SLURM_TASKS_PER_NODE): "2(x3),1" -> 2, 2, 2, 1.
expected<std::vector<int64_t>> expand_slurm_tasks_per_node(const std::string& text);

/// The endpoint a node dials to reach a head that listens on `listen` from `host`: the host, and the port
/// of `listen` ("tcp://*:5555" on gpu01 -> "tcp://gpu01:5555"). Errors: not a tcp:// endpoint, or no fixed
/// port (port 0 or '*': only the head would know the port the system picked).
expected<std::string> join_endpoint(const std::string& listen, const std::string& host);

/// A node's benchmarker devices (the CUDA target) and where they came from, in the order of precedence:
/// cluster.node_devices; CUDA_VISIBLE_DEVICES (k visible GPUs are ordinals 0..k-1 inside the process;
/// empty, "NoDevFiles" or "-1": none); SLURM_LOCALID when several tasks share a host's GPUs unbound
/// (`tasks_on_host` > 1: task i takes GPU i); cuda.devices. Empty on the CPU target.
struct device_choice {
  std::vector<int64_t> devices;
  std::string from;  ///< e.g. "CUDA_VISIBLE_DEVICES=2,3", for messages and the plan
};
device_choice choose_node_devices(const config& cfg, const environment& env, int64_t localid,
                                  int64_t tasks_on_host);

enum class process_role { head, node };

/// What the launcher says this process is.
struct launch_info {
  std::string launcher = "none";  ///< "none" (started by hand) or "slurm"
  process_role role = process_role::head;
  int64_t procid = 0;              ///< the launcher's task id (SLURM_PROCID; 0 without a launcher)
  int64_t ntasks = 1;              ///< tasks the launcher started (SLURM_NTASKS): 1 head + ntasks-1 nodes
  int64_t localid = 0;             ///< this task's index on its host (SLURM_LOCALID)
  std::vector<std::string> hosts;  ///< the step's hosts, expanded (empty without a launcher)
  std::vector<int64_t> tasks_per_host;  ///< tasks on each host (block distribution); empty: unknown
  std::string host;                     ///< this process's host (SLURMD_NODENAME, else the host name)
  std::string join;                     ///< the head's endpoint as nodes dial it (empty: not known)
  std::string node_id;                  ///< a node: its default id, <host>-<localid>
  device_choice devices;                ///< a node: its benchmarker devices (CUDA target)
};

/// Resolves this process from the environment. Without SLURM_PROCID: no launcher, a head. Under Slurm
/// (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST / SLURM_JOB_NODELIST / SLURM_NODELIST, SLURM_LOCALID,
/// SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE, SLURMD_NODENAME): procid 0 is the head, every other
/// procid a node dialing cluster.join if set, else tcp://<first host>:<port of cluster.listen>.
/// `host_name` is this machine's name, used where SLURMD_NODENAME is not set. Errors (each says what to
/// set): malformed Slurm variables; several tasks but no cluster.listen (every task would train alone);
/// a listen endpoint nodes cannot dial; a CUDA node that sees no GPU.
expected<launch_info> resolve_launch(const config& cfg, const environment& env, const std::string& host_name);

/// One role's actors in one process.
struct placed_role {
  std::string role;
  int64_t count = 0;
  std::vector<int64_t> devices;  ///< benchmarkers on the CUDA target: instance i's device; else empty (CPU)
};

/// One process of the launch.
struct planned_process {
  process_role role = process_role::head;
  int64_t procid = -1;       ///< the launcher's task id; -1: started by hand
  std::string host;          ///< empty: not known before launch
  std::string node_id;       ///< a node's id (empty: chosen at start, host-pid)
  std::string devices_from;  ///< a node: where its benchmarker devices come from
  std::vector<placed_role> actors;
};

/// Which process runs which actors on which device, and what will go wrong.
struct placement_plan {
  std::string target;
  std::string launcher;  ///< as launch_info
  int64_t self = -1;     ///< the launcher's task id of the process that made the plan; -1: none
  std::string listen;    ///< the head's endpoint (empty: one process, no cluster)
  std::string join;      ///< what nodes dial (empty: not known, e.g. a wildcard listen without a launcher)
  bool curve = false;    ///< CURVE on (cluster.secret_key set)
  bool plaintext_remote = false;  ///< without CURVE, other hosts admitted anyway (cluster.plaintext_remote)
  planned_process head;
  std::vector<planned_process> nodes;
  std::vector<std::string> pipeline;
  /// What matters before launching: a pipeline stage nobody serves, CURVE keys on one side only or
  /// missing, a head nodes cannot reach, benchmarkers sharing a GPU, node roles the head never uses.
  std::vector<std::string> warnings;
  std::vector<std::string>
      notes;  ///< worth knowing, nothing wrong (e.g. Slurm's task count replaced cluster.nodes)
};

/// The plan for `cfg` launched as `launch` says: nodes = launch.ntasks - 1 under a launcher, else
/// cluster.nodes. The head runs conductor, generators, learner, replay_buffer and every other role of
/// `roles:` with a count; each node cluster.node_roles, benchmarker i on its devices[i % n]. Key files are
/// looked up on this machine to warn about missing ones.
placement_plan plan_placement(const config& cfg, const launch_info& launch);

/// The plan as text a person reads (the roles of each process with their devices, the endpoint, CURVE,
/// how each pipeline stage is served, the warnings).
std::string format_placement(const placement_plan& plan);

/// When a node started by a launcher leaves by itself. A node otherwise outlives its head (it reconnects
/// with backoff, for `crucible train --resume`), so a launcher's job step would never end: it leaves once
/// the head, answered before, has not answered for `gone_grace`, or has never answered for
/// `startup_grace`. Not thread-safe: one watcher thread owns it.
class head_absence {
 public:
  using clock = std::chrono::steady_clock;
  head_absence(clock::duration startup_grace, clock::duration gone_grace, clock::time_point start);

  /// The grace periods for `cfg`: gone after 10 x liveness heartbeat intervals (at least 10 s), never up
  /// after 10 minutes.
  static head_absence for_config(const config& cfg, clock::time_point start);

  /// The head answered at `now`.
  void answered(clock::time_point now);
  bool should_leave(clock::time_point now) const;
  bool ever_answered() const { return answered_; }
  clock::duration gone_grace() const { return gone_grace_; }

 private:
  clock::duration startup_grace_;
  clock::duration gone_grace_;
  clock::time_point start_;
  clock::time_point last_answer_;
  bool answered_ = false;
};

}  // namespace crucible::runtime
