#pragma once
// Control and status: what operators and the runtime say to the system and what it reports back.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <msgpack.hpp>

namespace crucible {

/// command: stop | checkpoint | scale | status.
struct control {
  std::string command;
  std::string role;
  int32_t count = 0;
  std::map<std::string, std::string> args;  ///< node: a node to drain; timeout_s: how long the client waits
  MSGPACK_DEFINE_MAP(command, role, count, args);
};

/// How long the head may take over a command: the client's args.timeout_s (what it waits for the answer)
/// less a margin for the answer's way back, within [0.1, 300] s; 5 s when absent or not a number.
inline double control_deadline_s(const control& c) {
  auto it = c.args.find("timeout_s");
  if (it == c.args.end()) return 5.0;
  char* end = nullptr;
  const double t = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0' || !(t > 0)) return 5.0;
  return std::min(300.0, std::max(0.1, 0.9 * t));
}

struct role_status {
  std::string role;
  int32_t actors = 0;
  int32_t busy = 0;
  int32_t restarts = 0;
  int64_t queued = 0;
  MSGPACK_DEFINE_MAP(role, actors, busy, restarts, queued);
};

/// A node (or external actor) of the cluster as the head sees it.
struct node_status {
  std::string peer_id;
  std::string node_id;
  std::string host;
  std::map<std::string, int32_t> roles;  ///< role -> capacity it offered
  std::vector<std::string> devices;      ///< e.g. "cuda:0 NVIDIA H200"
  int32_t in_flight = 0;                 ///< work items sent and not yet answered
  int32_t queued = 0;                    ///< work items waiting at the head for its credit
  double silent_s = 0.0;                 ///< since the head last heard from it
  bool draining = false;
  MSGPACK_DEFINE_MAP(peer_id, node_id, host, roles, devices, in_flight, queued, silent_s, draining);
};

struct status_report {
  int64_t step = 0;
  int64_t policy_version = 0;
  int64_t candidates_generated = 0;
  int64_t candidates_scored = 0;
  int64_t candidates_in_flight = 0;
  int64_t candidates_abandoned = 0;  ///< unfinished when a stop's grace period ran out; stored as "abandoned"
  int64_t redispatched = 0;
  int64_t candidates_resumed = 0;  ///< in flight when the run this one resumes ended; taken over (and generated)
  double candidates_per_s = 0.0;
  double reward_mean = 0.0;
  double staleness_mean = 0.0;
  std::map<std::string, double> speedup_best;
  std::vector<role_status> roles;
  double wall_s = 0.0;
  std::vector<node_status> nodes;  ///< the cluster's nodes (empty in one process)
  std::string error;               ///< set when a control command could not be carried out
  /// What the head refused from the wire since it started, by reason (malformed, wrong_version, unregistered,
  /// unexpected_kind, stale_result, refused_registration, auth_denied, handshake_failed,
  /// inconsistent_result, control_refused); empty in one process.
  std::map<std::string, int64_t> rejected;
  MSGPACK_DEFINE_MAP(step, policy_version, candidates_generated, candidates_scored, candidates_in_flight,
                     candidates_abandoned, redispatched, candidates_per_s, reward_mean, staleness_mean,
                     speedup_best, roles, wall_s, nodes, error, rejected, candidates_resumed);
};

}  // namespace crucible
