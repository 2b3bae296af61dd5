#pragma once
// The head's end of the cluster transport: a ZeroMQ ROUTER socket that nodes and external actors (DEALER
// sockets, any language) connect to. It keeps the peer table — who registered, with which roles and
// capacities, how much work each asked for (credits), what each has in flight — exchanges heartbeats, and
// declares a peer dead when it has been silent for `liveness` heartbeat intervals, handing its in-flight
// request ids back to the owner so they can be re-dispatched. The protocol: docs/wire_protocol.md.
//
// Threading: one I/O thread owns every ZeroMQ socket (they are not thread-safe). The public functions are
// safe from any thread: they read the peer table under a mutex and hand outgoing frames to the I/O thread
// through a queue and an inproc wake-up socket. Events reach the owner through `on_event` (called on the I/O
// thread) or, without one, through next_event(). Nothing throws across the boundary: errors are values.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "messages/cluster.hpp"
#include "messages/control.hpp"
#include "messages/expected.hpp"
#include "runtime/cluster/curve_keys.hpp"

namespace crucible::runtime {

/// A peer's registration was accepted.
struct peer_joined {
  std::string peer_id;
  peer_ready info;
  std::string public_key;  ///< the CURVE key it authenticated with (empty without CURVE)
};

/// A peer's session ended. reason: heartbeat_timeout (silent for liveness intervals) | disconnected (it
/// said goodbye) | replaced (the same peer_id, or the same connection, registered again, e.g. after a
/// reconnect). `in_flight` are the request ids it had not answered: re-dispatch them; a late answer to one
/// of them is dropped and counted as stale.
struct peer_left {
  std::string peer_id;
  std::string reason;
  std::vector<uint64_t> in_flight;
};

/// A peer announced a drain: it takes no new work (its credits are gone) and will finish what it has.
struct peer_draining {
  std::string peer_id;
  std::string reason;
};

/// A peer answered a work item it had in flight. Answers to ids it did not have are counted
/// (stale_results) and dropped, so each request id is answered at most once.
struct work_done {
  std::string peer_id;
  std::string role;
  work_result result;
};

/// A peer asked for more work: `total` is its credit for `role` now.
struct credit_granted {
  std::string peer_id;
  std::string role;
  int32_t count = 0;
  int64_t total = 0;
};

/// A client (registered or not, e.g. `crucible scale`) sent a control command. Answer with
/// wire_head::reply(client, ...); `client` is an opaque token naming the connection.
struct control_request {
  std::string client;
  std::string peer_id;  ///< set when the sender is a registered peer
  control command;
  std::string address;     ///< the sender's IP address over TCP (empty for ipc:// and inproc://)
  std::string public_key;  ///< the CURVE key it authenticated with (empty without CURVE)
};

using wire_event =
    std::variant<peer_joined, peer_left, peer_draining, work_done, credit_granted, control_request>;

struct wire_head_options {
  /// Where to listen: "tcp://*:5555", or "tcp://127.0.0.1:0" for any free port (endpoint() tells which).
  std::string endpoint = "tcp://127.0.0.1:0";
  std::string head_id = "head";
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;  ///< intervals of silence after which a peer is dead
  /// Roles a peer may offer; empty: any. A peer offering another role is refused with the list.
  std::vector<std::string> known_roles;
  /// Why no peer may offer `role`, whatever its key, as the tail of a sentence after the role's name;
  /// empty when one may. Null: every role may be offered. (The gateway passes pipeline_stages'
  /// node_refusal: the head's own roles and those whose stage gives verdicts.)
  std::function<std::string(const std::string& role)> role_refusal;
  /// The most a peer may offer of one role (each unit is a member of the head's pool); more is refused, as
  /// are a role offered twice and a device index the peer does not bring.
  int32_t max_capacity = 256;
  /// With keys, the head is a CURVE server and admits only clients whose public key is listed.
  std::optional<curve_server_keys> curve;
  int64_t max_frame_bytes = 256ll << 20;  ///< larger frames are dropped by ZeroMQ (ZMQ_MAXMSGSIZE)
  /// Called on the I/O thread for every event. It may call any wire_head function; it must not block
  /// (forward to an actor or a queue). Without it, events queue for next_event().
  std::function<void(wire_event)> on_event;
};

/// A registered peer as the head sees it now.
struct peer_snapshot {
  std::string peer_id;
  peer_ready info;
  std::string public_key;
  std::map<std::string, int64_t> credits;  ///< role -> work items it may still be sent
  std::vector<uint64_t> in_flight;
  double silent_s = 0.0;  ///< since the last frame from it
  bool draining = false;
};

/// Counters since start; every rejected frame is counted here and never stops the head.
struct wire_head_counters {
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t malformed = 0;         ///< undecodable frames, bad bodies, wrong frame counts
  uint64_t wrong_version = 0;     ///< frames of another schema version, or a ready of another protocol
  uint64_t unregistered = 0;      ///< frames that need a registration from a connection without one
  uint64_t unexpected_kind = 0;   ///< well-formed frames of a kind a head does not take (e.g. "candidate")
  uint64_t stale_results = 0;     ///< answers to request ids the peer did not have in flight
  uint64_t refused = 0;           ///< registrations refused (protocol, unknown role, empty id)
  uint64_t auth_denied = 0;       ///< CURVE clients whose key is not allowed (ZAP said no)
  uint64_t handshake_failed = 0;  ///< ZeroMQ handshakes that failed (e.g. a plain client on a CURVE head)
  uint64_t send_failed = 0;       ///< frames ZeroMQ could not route (the connection was gone)
  uint64_t peers_joined = 0;
  uint64_t peers_left = 0;
};

/// What dispatch() did.
struct dispatched {
  std::string peer_id;
  uint64_t request_id = 0;
};

class wire_head {
 public:
  /// Binds the endpoint and starts the I/O thread. Errors: a bad or busy endpoint, unusable CURVE keys.
  static expected<std::unique_ptr<wire_head>> start(wire_head_options options);

  /// Tells every registered peer the session is over (disconnect), stops the I/O thread, closes the socket.
  /// Must not be called from on_event.
  ~wire_head();

  wire_head(const wire_head&) = delete;
  wire_head& operator=(const wire_head&) = delete;

  /// The bound endpoint with the actual port, e.g. "tcp://127.0.0.1:41234". Any thread.
  const std::string& endpoint() const;

  /// The CURVE public key peers need (empty without CURVE). Any thread.
  const std::string& public_key() const;

  /// Sends `item` to a registered peer that offered `item.role` and has credit for it; spends one credit
  /// and records the request as in flight. request_id 0 gets a fresh id. Returns the request id, or an
  /// error (not registered, draining, role not offered, no credit, id already in flight) — an unregistered
  /// connection never receives work. Any thread.
  expected<uint64_t> send_work(const std::string& peer_id, work_item item);

  /// send_work to the registered peer with the most credit for `item.role` (ties: the least in flight).
  /// An error if no peer has credit for it. Any thread.
  expected<dispatched> dispatch(work_item item);

  /// Asks a peer to drain: it stops taking work, finishes and answers what it has, then disconnects
  /// (peer_draining, then peer_left with reason "disconnected"). Any thread.
  status request_drain(const std::string& peer_id, const std::string& reason);

  /// Answers a control_request: `envelope` is a complete encoded frame (e.g. encode(status_report)). Only a
  /// client with an unanswered control request (of the last 10 minutes) can be answered. Any thread.
  status reply(const std::string& client, std::string envelope);

  /// The next event when no on_event callback is set; nullopt after `timeout`. Without a callback, events
  /// accumulate until taken: the owner must keep taking them. Any thread.
  std::optional<wire_event> next_event(std::chrono::milliseconds timeout);

  /// The registered peers now. Any thread.
  std::vector<peer_snapshot> peers() const;

  /// Any thread.
  wire_head_counters counters() const;

  struct impl;

 private:
  explicit wire_head(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::runtime
