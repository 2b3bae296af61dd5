#pragma once
// Cluster messages: what the head and its peers (nodes, external actors in any language) say to each other
// over ZeroMQ (ROUTER on the head, DEALER on a peer). Majordomo-style: a peer announces itself (`ready`), the
// head accepts or refuses it (`registered`), both sides send `heartbeat`s, the peer asks for work with
// `credit`, the head sends `work`, the peer answers `work_result`, and either side ends a session with
// `disconnect`. `error` answers a frame the receiver could not use. docs/wire_protocol.md is the reference.
//
// Every struct travels in the one envelope of messages/envelope.hpp; field names are the contract.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

namespace crucible {

/// The cluster protocol's own version: the order of frames and the rules around them (registration,
/// credits, liveness). Separate from schema_version, which covers the fields of every message; a peer whose
/// `ready.protocol` differs is refused with a reason.
constexpr uint32_t cluster_protocol_version = 1;

/// One role a peer serves, and how many work items of it the peer runs at once.
struct role_offer {
  std::string role;      ///< e.g. "benchmarker", or a custom stage's role name
  int32_t capacity = 1;  ///< concurrent work items; the peer should not grant more credit than this
  int32_t device = -1;   ///< index into peer_ready::devices the role runs on (-1: none or CPU)
  MSGPACK_DEFINE_MAP(role, capacity, device);
};

/// A device a peer brings (a GPU, or a CPU slot).
struct device_info {
  std::string kind = "cpu";  ///< cpu | cuda
  int32_t index = -1;        ///< device ordinal on its host (-1 for the CPU)
  std::string name;          ///< e.g. "NVIDIA H200"
  int64_t memory_mb = 0;
  MSGPACK_DEFINE_MAP(kind, index, name, memory_mb);
};

/// peer -> head, first frame of every session: who the peer is and what it offers.
struct peer_ready {
  std::string peer_id;  ///< unique per peer process; the same id after a reconnect replaces the old session
  std::string node_id;  ///< the node (host or launcher slot) the peer belongs to
  std::vector<role_offer> roles;
  std::vector<device_info> devices;
  std::string host;
  int64_t pid = 0;
  uint32_t protocol = cluster_protocol_version;
  std::map<std::string, std::string> labels;  ///< free-form, e.g. {"language": "python"}
  MSGPACK_DEFINE_MAP(peer_id, node_id, roles, devices, host, pid, protocol, labels);
};

/// head -> peer, the answer to `ready`. A refusal carries a reason a person can act on.
struct peer_registered {
  bool accepted = false;
  std::string reason;  ///< why it was refused (empty when accepted)
  std::string peer_id;
  std::string head_id;
  int64_t heartbeat_ms = 1000;  ///< both sides send a heartbeat this often
  int32_t liveness = 3;         ///< heartbeat intervals of silence after which the other side is dead
  MSGPACK_DEFINE_MAP(accepted, reason, peer_id, head_id, heartbeat_ms, liveness);
};

/// Both ways, every heartbeat_ms. Any frame counts as a sign of life; heartbeats keep a quiet link alive.
struct heartbeat {
  uint64_t seq = 0;
  double sent_unix = 0.0;
  MSGPACK_DEFINE_MAP(seq, sent_unix);
};

/// head -> peer: one unit of work for one of the roles the peer offered. Sent only to a registered peer
/// that has credit for the role.
struct work_item {
  uint64_t request_id = 0;  ///< unique among the work in flight; the result echoes it
  std::string role;         ///< which of the peer's roles runs it
  std::string stage;        ///< pipeline stage it belongs to (e.g. "benchmark"); informative
  /// The inputs, each a complete envelope (its own version and kind), e.g. a candidate and its
  /// compile_result for a benchmark stage.
  std::vector<std::vector<char>> payload;
  double timeout_s =
      0.0;              ///< after this long the sender re-dispatches it (0: no deadline); a hint for the peer
  int32_t attempt = 1;  ///< 1 for the first dispatch, more for a re-dispatch
  /// Numeric arguments of the stage (the benchmark stage: best_seen, the task's best verified speedup).
  std::map<std::string, double> args;
  MSGPACK_DEFINE_MAP(request_id, role, stage, payload, timeout_s, attempt, args);
};

/// peer -> head: the answer to one work_item. status: ok | error | unsupported (the peer cannot run it).
struct work_result {
  uint64_t request_id = 0;
  std::string status = "ok";
  std::vector<std::vector<char>> payload;  ///< the outputs, each a complete envelope
  std::string error;                       ///< what went wrong when status is not ok
  double wall_s = 0.0;                     ///< time the peer spent on it
  MSGPACK_DEFINE_MAP(request_id, status, payload, error, wall_s);
};

/// peer -> head: "send me `count` more work items of `role`". Credits add up; each work_item spends one.
/// A peer that never sends credit never receives work, so a busy GPU is never handed more than it asked for.
struct work_credit {
  std::string role;
  int32_t count = 1;
  MSGPACK_DEFINE_MAP(role, count);
};

/// Either way: the end of a session. drain = true: no new work; work in flight is finished and answered,
/// then the peer sends a final disconnect with drain = false. From the head, drain = false means "this
/// session is over" (the head stops, or does not know the peer): a peer reconnects and registers again.
struct peer_disconnect {
  std::string reason;
  bool drain = false;
  MSGPACK_DEFINE_MAP(reason, drain);
};

/// Either way: the answer to a frame the receiver could not use. It never ends the session by itself.
/// code: malformed | version | not_registered | unexpected_kind | unknown_request | bad_credit.
struct wire_error {
  std::string code;
  std::string message;
  uint64_t request_id = 0;  ///< the work it concerns, when there is one
  MSGPACK_DEFINE_MAP(code, message, request_id);
};

/// The schema version a frame claims, if it is a msgpack map with an unsigned "v"; used to tell a peer of
/// another version ("version" error) from one that sends garbage ("malformed").
std::optional<uint32_t> peek_schema_version(std::string_view bytes);

}  // namespace crucible
