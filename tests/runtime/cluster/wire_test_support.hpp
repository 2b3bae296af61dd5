#pragma once
// Helpers for the wire tests: waiting for head events, and a raw DEALER "peer" that speaks the protocol by
// hand, so a test controls every frame (and every silence) exactly.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <zmq.hpp>

#include <gtest/gtest.h>

#include "messages/envelope.hpp"
#include "runtime/cluster/wire_head.hpp"

namespace crucible::runtime::test {

using namespace std::chrono_literals;

/// Pops head events until one of type T satisfies `pred` or `timeout` passes; the others go to `seen`.
template <class T>
std::optional<T> wait_event(wire_head& head, std::chrono::milliseconds timeout,
                            const std::function<bool(const T&)>& pred = {},
                            std::vector<wire_event>* seen = nullptr) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto ev = head.next_event(left);
    if (!ev) return std::nullopt;
    if (auto* t = std::get_if<T>(&*ev); t && (!pred || pred(*t))) return std::move(*t);
    if (seen) seen->push_back(std::move(*ev));
  }
}

/// Polls `cond` every 10 ms until it holds or `timeout` passes.
inline bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

/// A DEALER driven by hand. Not thread-safe (one test thread).
class raw_peer {
 public:
  explicit raw_peer(const std::string& endpoint, zmq::socket_type type = zmq::socket_type::dealer)
      : socket_(ctx_, type) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  zmq::socket_t& socket() { return socket_; }

  void send_bytes(const std::string& bytes) { socket_.send(zmq::buffer(bytes), zmq::send_flags::none); }

  template <class T>
  void send(const T& msg) {
    send_bytes(encode(msg, "raw"));
  }

  /// The next frame's envelope within `timeout` (nullopt: nothing came). Heartbeats are skipped unless asked.
  std::optional<envelope> recv(std::chrono::milliseconds timeout, bool skip_heartbeats = true) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) return std::nullopt;
      std::vector<zmq::pollitem_t> items = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, left);
      if (!(items[0].revents & ZMQ_POLLIN)) return std::nullopt;
      zmq::message_t msg;
      (void)socket_.recv(msg);
      while (socket_.get(zmq::sockopt::rcvmore)) (void)socket_.recv(msg);  // REQ: the envelope is last
      auto env = decode(msg.to_string_view());
      EXPECT_TRUE(env) << "head sent an undecodable frame: " << env.message();
      if (!env) return std::nullopt;
      if (skip_heartbeats && env->kind == "heartbeat") continue;
      return std::move(*env);
    }
  }

  /// The next frame of kind T (others but heartbeats fail the test).
  template <class T>
  std::optional<T> recv_as(std::chrono::milliseconds timeout) {
    auto env = recv(timeout);
    if (!env) return std::nullopt;
    auto t = env->as<T>();
    EXPECT_TRUE(t) << t.message();
    if (!t) return std::nullopt;
    return std::move(*t);
  }

  /// Sends ready for `roles` and expects an accepting registered.
  peer_registered join(const std::string& peer_id, std::vector<role_offer> roles) {
    peer_ready r;
    r.peer_id = peer_id;
    r.node_id = "test-node";
    r.roles = std::move(roles);
    r.host = "localhost";
    for (const auto& o : r.roles)  // the devices the offers name (a head refuses an index it was not given)
      while (o.device >= static_cast<int32_t>(r.devices.size()))
        r.devices.push_back(device_info{"cuda", static_cast<int32_t>(r.devices.size()), "test GPU", 0});
    send(r);
    auto ack = recv_as<peer_registered>(2s);
    EXPECT_TRUE(ack && ack->accepted) << (ack ? ack->reason : "no answer to ready");
    return ack ? *ack : peer_registered{};
  }

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
};

/// A head on a free loopback port with short heartbeats, events queued for next_event().
inline std::unique_ptr<wire_head> start_head(wire_head_options opt = {}) {
  if (opt.endpoint.empty()) opt.endpoint = "tcp://127.0.0.1:0";
  auto head = wire_head::start(std::move(opt));
  EXPECT_TRUE(head) << head.message();
  return head ? std::move(*head) : nullptr;
}

/// 100 ms heartbeats; liveness 5 so a loaded 2-core machine does not lose peers by accident. Tests that
/// time the liveness rule set it themselves.
inline wire_head_options fast_head_options() {
  wire_head_options opt;
  opt.heartbeat_interval = 100ms;
  opt.liveness = 5;
  return opt;
}

inline work_item make_work(const std::string& role, const std::string& text, uint64_t request_id = 0) {
  work_item w;
  w.request_id = request_id;
  w.role = role;
  w.stage = role;
  w.payload = {encode_embedded(control{text, role, 0, {}}, "test")};
  return w;
}

}  // namespace crucible::runtime::test
