#pragma once
// A peer's end of the cluster transport: a ZeroMQ DEALER that connects to the head, registers its roles
// (`ready`), heartbeats, asks for work with credits, runs each work item through a handler and sends the
// result. When the head goes silent (no frame for `liveness` heartbeat intervals), says goodbye, or never
// answers a registration, the peer drops the socket and reconnects with exponential backoff (bounded),
// registering again by itself; the head then sees a new session of the same peer id. The protocol:
// docs/wire_protocol.md.
//
// Threading: one I/O thread owns the socket; `handler_threads` threads run the handler, so a slow handler
// never delays heartbeats. Every public function is safe from any thread. A work_reply may be called from
// any thread, once; it is a no-op after the peer is destroyed. Nothing throws across the boundary.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/cluster.hpp"
#include "messages/expected.hpp"
#include "runtime/cluster/curve_keys.hpp"

namespace crucible::runtime {

/// connecting: no session (connecting, registering, or waiting to reconnect); registered: a session, work
/// flows; draining: no new credit, finishing what it has; stopped: disconnected for good (drain finished or
/// stop()); refused: the head refused the registration (last_error() says why) — the peer does not retry.
enum class peer_state { connecting, registered, draining, stopped, refused };

const char* to_string(peer_state s);

/// Sends the result of one work item; request_id is filled in. Call it exactly once (later calls are
/// ignored), from any thread.
using work_reply = std::function<void(work_result)>;

/// Runs one work item, on one of the peer's handler threads. It may answer before returning (a synchronous
/// handler) or keep `reply` and answer later (hand the item to an actor). An exception is answered as an
/// error result.
using work_handler = std::function<void(const work_item&, work_reply)>;

struct wire_peer_options {
  std::string endpoint;  ///< the head, e.g. "tcp://head:5555"
  std::string
      peer_id;  ///< empty: "<host>:<pid>:<random>" (unique per process; keep it so across restarts
                ///< only if the old process is surely gone: the head replaces a session of the same id)
  std::string node_id;  ///< empty: the host name
  std::vector<role_offer> roles;
  std::vector<device_info> devices;
  std::map<std::string, std::string> labels;
  work_handler handler;  ///< required when roles are offered
  int handler_threads = 1;
  /// true: the peer asks for `capacity` items per role when it registers and for one more after each
  /// result (credit = capacity - items in hand). false: the owner asks with grant_credit().
  bool auto_credit = true;
  /// Until the head's `registered` says otherwise: heartbeat period and the silence that means "head lost".
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;
  /// How long to wait for `registered` before trying again (0: heartbeat_interval * liveness).
  std::chrono::milliseconds register_timeout{0};
  /// Reconnect delays: reconnect_min, doubled per failed attempt, at most reconnect_max (±20% jitter).
  std::chrono::milliseconds reconnect_min{100};
  std::chrono::milliseconds reconnect_max{5000};
  std::optional<curve_client_keys> curve;
  /// Called on the I/O thread at every state change, with a reason. Must not block or call stop().
  std::function<void(peer_state, const std::string&)> on_state;
};

struct wire_peer_counters {
  uint64_t registrations = 0;     ///< sessions the head accepted
  uint64_t connect_attempts = 0;  ///< sockets opened (the first one included)
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t work_received = 0;
  uint64_t results_sent = 0;
  uint64_t results_dropped = 0;  ///< answers to work of a session that had ended (the head re-dispatched it)
  uint64_t credits_sent = 0;     ///< work items asked for
  uint64_t errors_received = 0;  ///< error frames from the head
  uint64_t malformed = 0;        ///< frames from the head this peer could not use
};

class wire_peer {
 public:
  /// Validates the options, starts the I/O and handler threads and begins connecting. It does not wait
  /// for the head: wait_for(peer_state::registered, ...) does.
  static expected<std::unique_ptr<wire_peer>> start(wire_peer_options options);

  /// stop().
  ~wire_peer();

  wire_peer(const wire_peer&) = delete;
  wire_peer& operator=(const wire_peer&) = delete;

  const std::string& peer_id() const;
  peer_state state() const;

  /// Blocks until the state is `s` (true) or `timeout` passes (false). Any thread.
  bool wait_for(peer_state s, std::chrono::milliseconds timeout) const;

  /// What last went wrong (a refusal, an error frame, a registration timeout). Any thread.
  std::string last_error() const;

  /// Asks the head for `count` more items of `role` (manual credit; with auto_credit it adds to it).
  /// An error if the role was not offered or there is no session. Any thread.
  status grant_credit(const std::string& role, int32_t count);

  /// Graceful leave: no new credit, finish and answer every item in hand, then disconnect and stop.
  /// Returns at once; wait_for(peer_state::stopped, ...) waits. Any thread.
  void drain(const std::string& reason = "drain");

  /// Immediate leave: tells the head (its in-flight work is re-dispatched there), closes the socket, waits
  /// for running handlers to return. Idempotent. Must not be called from a handler or on_state.
  void stop();

  wire_peer_counters counters() const;

  struct impl;

 private:
  explicit wire_peer(std::shared_ptr<impl> impl);
  std::shared_ptr<impl> impl_;
};

}  // namespace crucible::runtime
