#include "runtime/cluster/wire_head.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/envelope.hpp"
#include "runtime/cluster/wire_outbox.hpp"

namespace crucible::runtime {

namespace {

using clock_type = std::chrono::steady_clock;

// A peer may pile up credit, but not enough to overflow anything.
constexpr int64_t max_credit = 1 << 20;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::optional<std::string> from_hex(const std::string& hex) {
  if (hex.size() % 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string z85_of(const std::string& raw) {
  if (raw.size() != 32) return {};
  char out[41] = {};
  zmq_z85_encode(out, reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  return out;
}

// A frame for the I/O thread to send. Work frames carry their session and request id so the I/O thread
// can check, at the moment of sending, that the peer still has that request in flight: a peer declared dead
// in between never receives it (its id was already handed back in peer_left).
struct outgoing {
  std::string identity;
  std::string bytes;
  bool delimiter = false;
  uint64_t session = 0;  ///< 0: not work
  uint64_t request_id = 0;
};

}  // namespace

struct wire_head::impl {
  struct peer {
    std::string identity;
    uint64_t session = 0;
    peer_ready info;
    std::string public_key;
    clock_type::time_point last_heard;
    std::map<std::string, int64_t> credits;
    std::map<uint64_t, std::string> in_flight;  ///< request id -> role
    bool draining = false;
  };
  struct client {
    int unanswered = 0;
    bool delimiter = false;
    clock_type::time_point asked;
  };
  // A client whose request the owner never answered is forgotten after this long (ROUTER does not say
  // when a connection goes away, so this bounds the table).
  static constexpr std::chrono::minutes client_memory{10};

  wire_head_options opt;
  std::string endpoint;
  std::string public_key;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  zmq::socket_t zap;      // CURVE only
  zmq::socket_t monitor;  // handshake failures
  std::unique_ptr<wire_outbox<outgoing>> outbox;
  std::thread io;
  std::atomic<bool> stopping{false};
  std::set<std::string> allowed_keys;  // raw 32-byte keys; read by the I/O thread only after start

  mutable std::mutex mu;                           // guards the tables below
  std::map<std::string, peer> peers;               // peer id -> session
  std::map<std::string, std::string> by_identity;  // routing id -> peer id
  std::map<std::string, client> clients;           // routing id -> unanswered control requests
  uint64_t next_session = 1;
  std::atomic<uint64_t> next_request{1};

  std::mutex events_mu;
  std::condition_variable events_cv;
  std::deque<wire_event> events;
  std::vector<wire_event> pending_events;  // I/O thread: emitted after each batch, outside every lock

  struct {
    std::atomic<uint64_t> frames_in{0}, frames_out{0}, malformed{0}, wrong_version{0}, unregistered{0},
        unexpected_kind{0}, stale_results{0}, refused{0}, auth_denied{0}, handshake_failed{0}, send_failed{0},
        peers_joined{0}, peers_left{0};
  } count;

  uint64_t heartbeat_seq = 0;

  std::chrono::milliseconds silence_limit() const { return opt.heartbeat_interval * opt.liveness; }

  // ---- I/O thread -------------------------------------------------------------------------------------

  void run() {
    auto next_beat = clock_type::now() + opt.heartbeat_interval;
    while (!stopping.load()) {
      std::vector<zmq::pollitem_t> items = {{static_cast<void*>(router), 0, ZMQ_POLLIN, 0},
                                            {static_cast<void*>(outbox->wake_socket()), 0, ZMQ_POLLIN, 0}};
      if (monitor) items.push_back({static_cast<void*>(monitor), 0, ZMQ_POLLIN, 0});
      if (zap) items.push_back({static_cast<void*>(zap), 0, ZMQ_POLLIN, 0});
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - clock_type::now());
      try {
        zmq::poll(items, std::max(wait, std::chrono::milliseconds(0)));
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) break;
        continue;  // EINTR
      }
      if (items[1].revents & ZMQ_POLLIN) flush_outbox();
      if (items[0].revents & ZMQ_POLLIN) read_router();
      for (size_t i = 2; i < items.size(); ++i) {
        if (!(items[i].revents & ZMQ_POLLIN)) continue;
        if (items[i].socket == static_cast<void*>(monitor)) read_monitor();
        if (items[i].socket == static_cast<void*>(zap)) answer_zap();
      }
      auto now = clock_type::now();
      if (now >= next_beat) {
        send_heartbeats();
        next_beat = now + opt.heartbeat_interval;
      }
      expire_silent_peers(now);
      emit_pending();
    }
    say_goodbye();
  }

  bool send_to(const std::string& identity, bool delimiter, const std::string& bytes) {
    try {
      if (!router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        ++count.send_failed;
        return false;
      }
      if (delimiter) router.send(zmq::message_t(), zmq::send_flags::sndmore);
      router.send(zmq::buffer(bytes), zmq::send_flags::none);
      ++count.frames_out;
      return true;
    } catch (const zmq::error_t&) {
      ++count.send_failed;  // EHOSTUNREACH: the connection is gone (ROUTER_MANDATORY)
      return false;
    }
  }

  template <class T>
  void send_msg(const std::string& identity, bool delimiter, const T& msg) {
    send_to(identity, delimiter, encode(msg, opt.head_id));
  }

  void send_error(const std::string& identity, bool delimiter, const std::string& code,
                  const std::string& what, uint64_t request_id = 0) {
    spdlog::debug("wire head: {} from {}: {}", code, to_hex(identity), what);
    send_msg(identity, delimiter, wire_error{code, what, request_id});
  }

  void flush_outbox() {
    for (auto& out : outbox->take()) {
      if (out.identity.empty()) continue;  // the destructor's wake-up
      if (out.session != 0) {
        std::lock_guard<std::mutex> lock(mu);
        auto id = by_identity.find(out.identity);
        if (id == by_identity.end()) continue;
        auto& p = peers.at(id->second);
        if (p.session != out.session || !p.in_flight.count(out.request_id)) continue;
      }
      send_to(out.identity, out.delimiter, out.bytes);
    }
  }

  void read_router() {
    // A bounded batch, so a flood of frames cannot starve heartbeats and liveness checks.
    for (int n = 0; n < 512; ++n) {
      std::vector<zmq::message_t> frames;
      try {
        if (!zmq::recv_multipart(router, std::back_inserter(frames), zmq::recv_flags::dontwait)) return;
      } catch (const zmq::error_t&) {
        return;
      }
      handle(frames);
    }
  }

  // The peer id of a registered connection (and its last_heard refreshed), or empty.
  std::string touch(const std::string& identity) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = by_identity.find(identity);
    if (it == by_identity.end()) return {};
    peers.at(it->second).last_heard = clock_type::now();
    return it->second;
  }

  void handle(std::vector<zmq::message_t>& frames) {
    ++count.frames_in;
    if (frames.empty()) return;
    std::string identity = frames[0].to_string();
    size_t first = 1;
    bool delimiter = false;
    // REQ clients (a one-shot `crucible status`) put an empty delimiter before the envelope.
    if (frames.size() >= 3 && frames[1].size() == 0) {
      delimiter = true;
      first = 2;
    }
    std::string peer_id = touch(identity);
    if (frames.size() != first + 1) {
      ++count.malformed;
      send_error(identity, delimiter, "malformed",
                 "expected one envelope frame, got " + std::to_string(frames.size() - first));
      return;
    }
    zmq::message_t& body = frames[first];
    std::string_view bytes(static_cast<const char*>(body.data()), body.size());
    auto env = decode(bytes);
    if (!env) {
      auto v = peek_schema_version(bytes);
      if (v && *v != schema_version) {
        ++count.wrong_version;
        send_error(identity, delimiter, "version", env.message());
      } else {
        ++count.malformed;
        send_error(identity, delimiter, "malformed", env.message());
      }
      return;
    }
    const std::string& kind = env->kind;
    if (kind == message_kind<peer_ready>::name) return on_ready(identity, delimiter, *env, body);
    if (kind == message_kind<control>::name) return on_control(identity, delimiter, peer_id, *env, body);
    if (kind == message_kind<wire_error>::name) {
      auto e = env->as<wire_error>();
      spdlog::warn("wire head: peer {} reports {}: {}", peer_id.empty() ? to_hex(identity) : peer_id,
                   e ? e->code : "?", e ? e->message : env->kind);
      return;
    }
    bool session_kind = kind == message_kind<heartbeat>::name || kind == message_kind<work_credit>::name ||
                        kind == message_kind<work_result>::name ||
                        kind == message_kind<peer_disconnect>::name;
    if (!session_kind) {
      ++count.unexpected_kind;
      send_error(identity, delimiter, "unexpected_kind", "a head does not take '" + kind + "' frames");
      return;
    }
    if (peer_id.empty()) {
      if (kind == message_kind<peer_disconnect>::name) return;  // a goodbye needs no answer
      ++count.unregistered;
      send_error(identity, delimiter, "not_registered", "send 'ready' and wait for 'registered' first");
      return;
    }
    if (kind == message_kind<heartbeat>::name) return;  // touch() did the work
    if (kind == message_kind<work_credit>::name) return on_credit(identity, delimiter, peer_id, *env);
    if (kind == message_kind<work_result>::name) return on_result(identity, delimiter, peer_id, *env);
    on_disconnect(peer_id, *env, identity, delimiter);
  }

  void refuse(const std::string& identity, bool delimiter, const std::string& peer_id,
              const std::string& why) {
    ++count.refused;
    spdlog::warn("wire head: refused peer '{}': {}", peer_id, why);
    peer_registered r;
    r.accepted = false;
    r.reason = why;
    r.peer_id = peer_id;
    r.head_id = opt.head_id;
    r.heartbeat_ms = opt.heartbeat_interval.count();
    r.liveness = opt.liveness;
    send_msg(identity, delimiter, r);
  }

  // Ends a session under `mu`; the caller emits the event after unlocking.
  peer_left end_session_locked(const std::string& peer_id, const std::string& reason) {
    auto it = peers.find(peer_id);
    peer_left left{peer_id, reason, {}};
    for (const auto& [rid, role] : it->second.in_flight) left.in_flight.push_back(rid);
    by_identity.erase(it->second.identity);
    peers.erase(it);
    ++count.peers_left;
    spdlog::info("wire head: peer '{}' left ({}), {} request(s) in flight", peer_id, reason,
                 left.in_flight.size());
    return left;
  }

  void on_ready(const std::string& identity, bool delimiter, const envelope& env, zmq::message_t& frame) {
    auto r = env.as<peer_ready>();
    if (!r) {
      ++count.malformed;
      return send_error(identity, delimiter, "malformed", r.message());
    }
    if (r->protocol != cluster_protocol_version) {
      ++count.wrong_version;
      return refuse(identity, delimiter, r->peer_id,
                    "cluster protocol " + std::to_string(r->protocol) +
                        " is not supported (this head speaks " + std::to_string(cluster_protocol_version) +
                        ")");
    }
    if (r->peer_id.empty()) return refuse(identity, delimiter, r->peer_id, "ready has an empty peer_id");
    std::set<std::string> offered;
    for (const auto& offer : r->roles) {
      if (offer.role.empty()) return refuse(identity, delimiter, r->peer_id, "a role offer has no name");
      // Each unit of capacity becomes a member of the head's pool: a bound keeps one frame from spawning
      // thousands of them.
      if (offer.capacity < 1 || offer.capacity > opt.max_capacity)
        return refuse(identity, delimiter, r->peer_id,
                      "role '" + offer.role + "' offers capacity " + std::to_string(offer.capacity) +
                          " (this head takes 1 to " + std::to_string(opt.max_capacity) + ")");
      if (offer.device < -1 || offer.device >= static_cast<int32_t>(r->devices.size()))
        return refuse(identity, delimiter, r->peer_id,
                      "role '" + offer.role + "' names device " + std::to_string(offer.device) + " of " +
                          std::to_string(r->devices.size()) + " it brings");
      if (!offered.insert(offer.role).second)
        return refuse(identity, delimiter, r->peer_id, "role '" + offer.role + "' is offered twice");
      if (std::string no = opt.role_refusal ? opt.role_refusal(offer.role) : std::string(); !no.empty())
        return refuse(identity, delimiter, r->peer_id, "role '" + offer.role + "'" + no);
      if (!opt.known_roles.empty() &&
          std::find(opt.known_roles.begin(), opt.known_roles.end(), offer.role) == opt.known_roles.end()) {
        std::string list;
        for (const auto& k : opt.known_roles) list += (list.empty() ? "" : ", ") + k;
        return refuse(identity, delimiter, r->peer_id,
                      "role '" + offer.role + "' is not one this head runs (" + list + ")");
      }
    }
    std::string key;
    if (opt.curve) {
      try {
        key = frame.gets("User-Id");  // set by our ZAP handler: the client's public key
      } catch (const zmq::error_t&) {
      }
    }
    bool duplicate = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto same_conn = by_identity.find(identity);
      if (same_conn != by_identity.end()) {
        if (same_conn->second == r->peer_id) {
          duplicate = true;  // a repeated ready on a live session: acknowledge again, keep the session
        } else {
          pending_events.push_back(end_session_locked(same_conn->second, "replaced"));
        }
      }
      if (!duplicate) {
        if (peers.count(r->peer_id)) pending_events.push_back(end_session_locked(r->peer_id, "replaced"));
        peer p;
        p.identity = identity;
        p.session = next_session++;
        p.info = *r;
        p.public_key = key;
        p.last_heard = clock_type::now();
        peers[r->peer_id] = std::move(p);
        by_identity[identity] = r->peer_id;
        ++count.peers_joined;
      }
    }
    peer_registered ack;
    ack.accepted = true;
    ack.peer_id = r->peer_id;
    ack.head_id = opt.head_id;
    ack.heartbeat_ms = opt.heartbeat_interval.count();
    ack.liveness = opt.liveness;
    send_msg(identity, delimiter, ack);
    if (!duplicate) {
      spdlog::info("wire head: peer '{}' joined from node '{}' ({} role(s))", r->peer_id, r->node_id,
                   r->roles.size());
      pending_events.push_back(peer_joined{r->peer_id, *r, key});
    }
  }

  void on_credit(const std::string& identity, bool delimiter, const std::string& peer_id,
                 const envelope& env) {
    auto c = env.as<work_credit>();
    if (!c) {
      ++count.malformed;
      return send_error(identity, delimiter, "malformed", c.message());
    }
    std::string problem;
    int64_t total = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto& p = peers.at(peer_id);
      bool offered = std::any_of(p.info.roles.begin(), p.info.roles.end(),
                                 [&](const role_offer& o) { return o.role == c->role; });
      if (c->count <= 0)
        problem = "credit count must be positive, got " + std::to_string(c->count);
      else if (!offered)
        problem = "role '" + c->role + "' was not offered in ready";
      else if (p.draining)
        return;  // a credit sent before the peer saw our drain request: no longer wanted, not an error
      else
        total = p.credits[c->role] = std::min(max_credit, p.credits[c->role] + c->count);
    }
    if (!problem.empty()) {
      ++count.malformed;
      return send_error(identity, delimiter, "bad_credit", problem);
    }
    pending_events.push_back(credit_granted{peer_id, c->role, c->count, total});
  }

  void on_result(const std::string& identity, bool delimiter, const std::string& peer_id,
                 const envelope& env) {
    auto r = env.as<work_result>();
    if (!r) {
      ++count.malformed;
      return send_error(identity, delimiter, "malformed", r.message());
    }
    std::string role;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto& p = peers.at(peer_id);
      auto it = p.in_flight.find(r->request_id);
      if (it != p.in_flight.end()) {
        role = it->second;
        p.in_flight.erase(it);
      }
    }
    if (role.empty()) {
      ++count.stale_results;
      return send_error(identity, delimiter, "unknown_request",
                        "request " + std::to_string(r->request_id) + " is not in flight on this session",
                        r->request_id);
    }
    pending_events.push_back(work_done{peer_id, role, std::move(*r)});
  }

  void on_disconnect(const std::string& peer_id, const envelope& env, const std::string& identity,
                     bool delimiter) {
    auto d = env.as<peer_disconnect>();
    if (!d) {
      ++count.malformed;
      return send_error(identity, delimiter, "malformed", d.message());
    }
    std::lock_guard<std::mutex> lock(mu);
    if (d->drain) {
      auto& p = peers.at(peer_id);
      p.draining = true;
      p.credits.clear();
      pending_events.push_back(peer_draining{peer_id, d->reason});
    } else {
      pending_events.push_back(end_session_locked(peer_id, "disconnected"));
    }
  }

  void on_control(const std::string& identity, bool delimiter, const std::string& peer_id,
                  const envelope& env, zmq::message_t& frame) {
    auto c = env.as<control>();
    if (!c) {
      ++count.malformed;
      return send_error(identity, delimiter, "malformed", c.message());
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      auto now = clock_type::now();
      for (auto it = clients.begin(); it != clients.end();)
        it = now - it->second.asked > client_memory ? clients.erase(it) : std::next(it);
      auto& cl = clients[identity];
      ++cl.unanswered;
      cl.delimiter = delimiter;
      cl.asked = now;
    }
    // Who sent it, as the connection says: the policy for commands that change the run depends on it.
    auto property = [&](const char* name) {
      try {
        return std::string(frame.gets(name));
      } catch (const zmq::error_t&) {
        return std::string();
      }
    };
    pending_events.push_back(control_request{to_hex(identity), peer_id, std::move(*c),
                                             property("Peer-Address"),
                                             opt.curve ? property("User-Id") : std::string()});
  }

  void send_heartbeats() {
    std::string bytes = encode(heartbeat{++heartbeat_seq, unix_now()}, opt.head_id);
    std::vector<std::string> targets;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [id, p] : peers) targets.push_back(p.identity);
    }
    for (const auto& t : targets) send_to(t, false, bytes);
  }

  void expire_silent_peers(clock_type::time_point now) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> dead;
    for (const auto& [id, p] : peers)
      if (now - p.last_heard > silence_limit()) dead.push_back(id);
    for (const auto& id : dead) pending_events.push_back(end_session_locked(id, "heartbeat_timeout"));
  }

  void read_monitor() {
    for (;;) {
      std::vector<zmq::message_t> frames;
      try {
        if (!zmq::recv_multipart(monitor, std::back_inserter(frames), zmq::recv_flags::dontwait)) return;
      } catch (const zmq::error_t&) {
        return;
      }
      if (frames.empty() || frames[0].size() < 6) continue;
      uint16_t event = 0;
      std::memcpy(&event, frames[0].data(), sizeof event);
      if (event & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
        ++count.handshake_failed;
    }
  }

  // ZAP (RFC 27): libzmq asks, for every CURVE handshake, whether the client's public key may connect.
  void answer_zap() {
    for (;;) {
      std::vector<zmq::message_t> req;
      try {
        if (!zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) return;
      } catch (const zmq::error_t&) {
        return;
      }
      // libzmq only sends well-formed requests, but a REP socket must answer every one it receives.
      req.resize(std::max<size_t>(req.size(), 6));
      std::string mechanism = req[5].to_string();
      std::string key = req.size() >= 7 ? req[6].to_string() : std::string();
      bool ok = mechanism == "CURVE" && allowed_keys.count(key);
      if (!ok) {
        ++count.auth_denied;
        spdlog::warn("wire head: refused a {} handshake from {} (key {} is not allowed)", mechanism,
                     req[3].to_string(), key.size() == 32 ? z85_of(key) : "none");
      }
      std::array<zmq::message_t, 6> reply = {zmq::message_t(std::string("1.0")),
                                             zmq::message_t(req[1].to_string()),
                                             zmq::message_t(std::string(ok ? "200" : "400")),
                                             zmq::message_t(std::string(ok ? "OK" : "key not allowed")),
                                             zmq::message_t(ok ? z85_of(key) : std::string()),
                                             zmq::message_t()};
      try {
        zmq::send_multipart(zap, reply);
      } catch (const zmq::error_t&) {
      }
    }
  }

  void emit_pending() {
    if (pending_events.empty()) return;
    std::vector<wire_event> batch;
    batch.swap(pending_events);
    for (auto& ev : batch) {
      if (opt.on_event) {
        try {
          opt.on_event(std::move(ev));
        } catch (const std::exception& e) {
          spdlog::error("wire head: on_event threw: {}", e.what());
        } catch (...) {
          spdlog::error("wire head: on_event threw");
        }
      } else {
        std::lock_guard<std::mutex> lock(events_mu);
        events.push_back(std::move(ev));
        events_cv.notify_one();
      }
    }
  }

  void say_goodbye() {
    std::vector<std::string> targets;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [id, p] : peers) targets.push_back(p.identity);
    }
    std::string bytes = encode(peer_disconnect{"head stopping", false}, opt.head_id);
    for (const auto& t : targets) send_to(t, false, bytes);
  }

  // ---- any thread -------------------------------------------------------------------------------------

  // Checks and reserves under `mu`; `pick` chooses the peer when peer_id is empty.
  expected<dispatched> send_work(std::string peer_id, work_item item) {
    if (item.role.empty()) return make_error("work item has no role");
    if (item.request_id == 0) item.request_id = next_request.fetch_add(1);
    std::string bytes = encode(item, opt.head_id);
    std::lock_guard<std::mutex> lock(mu);
    if (peer_id.empty()) {
      const peer* best = nullptr;
      for (const auto& [id, p] : peers) {
        auto c = p.credits.find(item.role);
        if (p.draining || c == p.credits.end() || c->second <= 0) continue;
        if (!best || c->second > best->credits.at(item.role) ||
            (c->second == best->credits.at(item.role) && p.in_flight.size() < best->in_flight.size())) {
          best = &p;
          peer_id = id;
        }
      }
      if (!best) return make_error("no registered peer has credit for role '" + item.role + "'");
    }
    auto it = peers.find(peer_id);
    if (it == peers.end()) return make_error("peer '" + peer_id + "' is not registered");
    peer& p = it->second;
    if (p.draining) return make_error("peer '" + peer_id + "' is draining");
    bool offered = std::any_of(p.info.roles.begin(), p.info.roles.end(),
                               [&](const role_offer& o) { return o.role == item.role; });
    if (!offered) return make_error("peer '" + peer_id + "' does not offer role '" + item.role + "'");
    auto credit = p.credits.find(item.role);
    if (credit == p.credits.end() || credit->second <= 0)
      return make_error("peer '" + peer_id + "' has no credit for role '" + item.role + "' (it did not ask)");
    if (p.in_flight.count(item.request_id))
      return make_error("request " + std::to_string(item.request_id) + " is already in flight on '" +
                        peer_id + "'");
    --credit->second;
    p.in_flight[item.request_id] = item.role;
    outbox->push(outgoing{p.identity, std::move(bytes), false, p.session, item.request_id});
    return dispatched{peer_id, item.request_id};
  }
};

wire_head::wire_head(std::unique_ptr<impl> impl) : impl_(std::move(impl)) {}

expected<std::unique_ptr<wire_head>> wire_head::start(wire_head_options options) {
  if (options.heartbeat_interval.count() <= 0)
    return make_error("wire head: heartbeat interval must be positive");
  if (options.liveness < 1) return make_error("wire head: liveness must be at least 1");
  auto m = std::make_unique<impl>();
  m->opt = std::move(options);
  auto& opt = m->opt;
  try {
    m->router.set(zmq::sockopt::router_mandatory, 1);
    m->router.set(zmq::sockopt::linger, 200);  // enough for the goodbye frames, never a hang on exit
    m->router.set(zmq::sockopt::maxmsgsize, opt.max_frame_bytes);
    if (opt.curve) {
      if (!curve_available()) return make_error("wire head: CURVE keys are set but this libzmq has no CURVE");
      auto secret = z85_key_bytes(opt.curve->server.secret_key);
      if (!secret) return make_error("wire head: server secret key: " + secret.message());
      if (opt.curve->allowed_clients.empty())
        return make_error("wire head: CURVE is on but no client key is allowed: no peer could join");
      for (const auto& k : opt.curve->allowed_clients) {
        auto raw = z85_key_bytes(k);
        if (!raw) return make_error("wire head: allowed client key: " + raw.message());
        m->allowed_keys.insert(*raw);
      }
      m->public_key = opt.curve->server.public_key;
      // The ZAP handler must be bound before the first handshake; it lives in this head's own context.
      m->zap = zmq::socket_t(m->ctx, zmq::socket_type::rep);
      m->zap.set(zmq::sockopt::linger, 0);
      m->zap.bind("inproc://zeromq.zap.01");
      m->router.set(zmq::sockopt::zap_domain, "crucible");
      m->router.set(zmq::sockopt::curve_server, true);
      m->router.set(zmq::sockopt::curve_secretkey, zmq::const_buffer(secret->data(), secret->size()));
    }
    std::string monitor_address = "inproc://crucible-head-monitor";
    if (zmq_socket_monitor(static_cast<void*>(m->router), monitor_address.c_str(),
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0) {
      m->monitor = zmq::socket_t(m->ctx, zmq::socket_type::pair);
      m->monitor.set(zmq::sockopt::linger, 0);
      m->monitor.connect(monitor_address);
    }
    try {
      m->router.bind(opt.endpoint);
    } catch (const zmq::error_t& e) {
      return make_error("wire head: cannot listen on '" + opt.endpoint + "': " + e.what());
    }
    m->endpoint = m->router.get(zmq::sockopt::last_endpoint);
    m->outbox = std::make_unique<wire_outbox<outgoing>>(m->ctx, "head");
  } catch (const zmq::error_t& e) {
    return make_error(std::string("wire head: ZeroMQ set-up failed: ") + e.what());
  }
  impl* raw = m.get();
  m->io = std::thread([raw] { raw->run(); });
  spdlog::info("wire head '{}' listening on {}{}", opt.head_id, m->endpoint, opt.curve ? " (CURVE)" : "");
  return std::unique_ptr<wire_head>(new wire_head(std::move(m)));
}

wire_head::~wire_head() {
  impl_->stopping = true;
  impl_->outbox->push(outgoing{});  // wakes the poll; an empty identity is never sent
  if (impl_->io.joinable()) impl_->io.join();
  if (impl_->monitor) zmq_socket_monitor(static_cast<void*>(impl_->router), nullptr, 0);
}

const std::string& wire_head::endpoint() const {
  return impl_->endpoint;
}

const std::string& wire_head::public_key() const {
  return impl_->public_key;
}

expected<uint64_t> wire_head::send_work(const std::string& peer_id, work_item item) {
  if (peer_id.empty()) return make_error("send_work needs a peer id (dispatch() picks one)");
  auto d = impl_->send_work(peer_id, std::move(item));
  if (!d) return d.err();
  return d->request_id;
}

expected<dispatched> wire_head::dispatch(work_item item) {
  return impl_->send_work({}, std::move(item));
}

status wire_head::request_drain(const std::string& peer_id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->peers.find(peer_id);
  if (it == impl_->peers.end()) return make_error("peer '" + peer_id + "' is not registered");
  // No new work from now on, even before the peer confirms.
  it->second.draining = true;
  it->second.credits.clear();
  impl_->outbox->push(
      outgoing{it->second.identity, encode(peer_disconnect{reason, true}, impl_->opt.head_id)});
  return {};
}

status wire_head::reply(const std::string& client, std::string envelope) {
  auto identity = from_hex(client);
  if (!identity) return make_error("'" + client + "' is not a client token from a control_request");
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->clients.find(*identity);
  if (it == impl_->clients.end() || it->second.unanswered == 0)
    return make_error("client '" + client + "' has no unanswered control request");
  bool delimiter = it->second.delimiter;
  if (--it->second.unanswered == 0) impl_->clients.erase(it);
  impl_->outbox->push(outgoing{*identity, std::move(envelope), delimiter});
  return {};
}

std::optional<wire_event> wire_head::next_event(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->events_mu);
  if (!impl_->events_cv.wait_for(lock, timeout, [&] { return !impl_->events.empty(); })) return std::nullopt;
  wire_event ev = std::move(impl_->events.front());
  impl_->events.pop_front();
  return ev;
}

std::vector<peer_snapshot> wire_head::peers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<peer_snapshot> out;
  auto now = clock_type::now();
  for (const auto& [id, p] : impl_->peers) {
    peer_snapshot s;
    s.peer_id = id;
    s.info = p.info;
    s.public_key = p.public_key;
    s.credits = p.credits;
    for (const auto& [rid, role] : p.in_flight) s.in_flight.push_back(rid);
    s.silent_s = std::chrono::duration<double>(now - p.last_heard).count();
    s.draining = p.draining;
    out.push_back(std::move(s));
  }
  return out;
}

wire_head_counters wire_head::counters() const {
  const auto& c = impl_->count;
  wire_head_counters out;
  out.frames_in = c.frames_in;
  out.frames_out = c.frames_out;
  out.malformed = c.malformed;
  out.wrong_version = c.wrong_version;
  out.unregistered = c.unregistered;
  out.unexpected_kind = c.unexpected_kind;
  out.stale_results = c.stale_results;
  out.refused = c.refused;
  out.auth_denied = c.auth_denied;
  out.handshake_failed = c.handshake_failed;
  out.send_failed = c.send_failed;
  out.peers_joined = c.peers_joined;
  out.peers_left = c.peers_left;
  return out;
}

}  // namespace crucible::runtime
