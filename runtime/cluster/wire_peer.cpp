#include "runtime/cluster/wire_peer.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/envelope.hpp"
#include "runtime/cluster/wire_outbox.hpp"

namespace crucible::runtime {

namespace {

using clock_type = std::chrono::steady_clock;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// What other threads hand to the I/O thread.
struct peer_out {
  enum class what { result, credit, drain, stop } type = what::result;
  uint64_t session = 0;
  std::string role;
  work_result result;
  int32_t count = 0;
  std::string reason;
};

struct job {
  work_item item;
  uint64_t session = 0;
};

}  // namespace

const char* to_string(peer_state s) {
  switch (s) {
    case peer_state::connecting:
      return "connecting";
    case peer_state::registered:
      return "registered";
    case peer_state::draining:
      return "draining";
    case peer_state::stopped:
      return "stopped";
    case peer_state::refused:
      return "refused";
  }
  return "?";
}

struct wire_peer::impl : std::enable_shared_from_this<wire_peer::impl> {
  wire_peer_options opt;
  zmq::context_t ctx{1};
  std::optional<zmq::socket_t> dealer;
  std::unique_ptr<wire_outbox<peer_out>> outbox;
  std::thread io;
  std::vector<std::thread> workers;
  std::mutex stop_mu;  // stop() from two threads joins once

  // State visible to other threads.
  mutable std::mutex state_mu;
  mutable std::condition_variable state_cv;
  peer_state state_ = peer_state::connecting;
  std::string last_error_;
  std::atomic<uint64_t> current_session{0};  // 0: none

  // Handler queue.
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<job> jobs;
  bool jobs_closed = false;

  // I/O thread only.
  uint64_t sessions = 0;
  int attempt = 0;
  std::chrono::milliseconds beat_interval{1000};
  int liveness = 3;
  clock_type::time_point last_heard, next_beat, register_deadline, reconnect_at;
  bool waiting_to_reconnect = false;
  bool drain_requested = false;
  std::string drain_reason;
  std::map<std::string, int> busy;  // role -> items received and not yet answered
  uint64_t beat_seq = 0;
  std::mt19937 rng{std::random_device{}()};

  struct {
    std::atomic<uint64_t> registrations{0}, connect_attempts{0}, frames_in{0}, frames_out{0},
        work_received{0}, results_sent{0}, results_dropped{0}, credits_sent{0}, errors_received{0},
        malformed{0};
  } count;

  peer_state state() const {
    std::lock_guard<std::mutex> lock(state_mu);
    return state_;
  }

  void set_state(peer_state s, const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(state_mu);
      if (state_ == s) return;
      state_ = s;
    }
    state_cv.notify_all();
    spdlog::debug("wire peer '{}': {} ({})", opt.peer_id, to_string(s), why);
    if (opt.on_state) {
      try {
        opt.on_state(s, why);
      } catch (...) {
        spdlog::error("wire peer '{}': on_state threw", opt.peer_id);
      }
    }
  }

  void set_error(const std::string& e) {
    std::lock_guard<std::mutex> lock(state_mu);
    last_error_ = e;
  }

  const role_offer* offer(const std::string& role) const {
    for (const auto& o : opt.roles)
      if (o.role == role) return &o;
    return nullptr;
  }

  // ---- I/O thread -------------------------------------------------------------------------------------

  template <class T>
  bool send_msg(const T& msg) {
    if (!dealer) return false;
    std::string bytes = encode(msg, opt.peer_id);
    try {
      if (!dealer->send(zmq::buffer(bytes), zmq::send_flags::dontwait)) return false;
      ++count.frames_out;
      return true;
    } catch (const zmq::error_t&) {
      return false;
    }
  }

  void open_socket() {
    dealer.emplace(ctx, zmq::socket_type::dealer);
    dealer->set(zmq::sockopt::linger, 0);  // a dropped session's queued frames are worthless
    dealer->set(zmq::sockopt::maxmsgsize, int64_t(256) << 20);
    if (opt.curve) {
      // Validated in start(), so these cannot fail.
      auto server = *z85_key_bytes(opt.curve->server_public);
      auto pub = *z85_key_bytes(opt.curve->client.public_key);
      auto sec = *z85_key_bytes(opt.curve->client.secret_key);
      dealer->set(zmq::sockopt::curve_serverkey, zmq::const_buffer(server.data(), server.size()));
      dealer->set(zmq::sockopt::curve_publickey, zmq::const_buffer(pub.data(), pub.size()));
      dealer->set(zmq::sockopt::curve_secretkey, zmq::const_buffer(sec.data(), sec.size()));
    }
    dealer->connect(opt.endpoint);
    ++count.connect_attempts;
    send_ready();
  }

  void send_ready() {
    peer_ready r;
    r.peer_id = opt.peer_id;
    r.node_id = opt.node_id;
    r.roles = opt.roles;
    r.devices = opt.devices;
    r.host = host_name();
    r.pid = ::getpid();
    r.labels = opt.labels;
    send_msg(r);
    auto wait =
        opt.register_timeout.count() > 0 ? opt.register_timeout : opt.heartbeat_interval * opt.liveness;
    register_deadline = clock_type::now() + wait;
  }

  // Ends the session (if any) and schedules the next connection attempt.
  void lose_session(const std::string& why, bool quick) {
    if (dealer) {
      dealer->close();
      dealer.reset();
    }
    current_session = 0;
    ++attempt;
    auto base = quick ? opt.reconnect_min
                      : std::min(opt.reconnect_max, opt.reconnect_min * (1 << std::min(attempt - 1, 16)));
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    auto delay = std::chrono::milliseconds(static_cast<int64_t>(base.count() * jitter(rng)));
    reconnect_at = clock_type::now() + std::min(delay, opt.reconnect_max);
    waiting_to_reconnect = true;
    set_error(why);
    spdlog::info("wire peer '{}': {}; reconnecting in {} ms", opt.peer_id, why, delay.count());
    set_state(peer_state::connecting, why);
  }

  void close_for_good(peer_state final_state, const std::string& why) {
    if (dealer) {
      dealer->set(zmq::sockopt::linger, 200);  // let the goodbye leave
      dealer->close();
      dealer.reset();
    }
    current_session = 0;
    set_state(final_state, why);
  }

  int total_busy() const {
    int n = 0;
    for (const auto& [role, b] : busy) n += b;
    return n;
  }

  void send_credit(const std::string& role, int32_t n) {
    if (n <= 0) return;
    if (send_msg(work_credit{role, n})) count.credits_sent += n;
  }

  void begin_drain(const std::string& reason) {
    drain_requested = true;
    drain_reason = reason;
    peer_state s = state();
    if (s == peer_state::registered) {
      // The state first: whoever hears from the head that this peer drains finds it draining here too.
      set_state(peer_state::draining, reason);
      send_msg(peer_disconnect{reason, true});
    } else if (s == peer_state::connecting) {
      close_for_good(peer_state::stopped, reason + " (no session)");
    }
  }

  void run() {
    open_socket();
    for (;;) {
      std::vector<zmq::pollitem_t> items = {{static_cast<void*>(outbox->wake_socket()), 0, ZMQ_POLLIN, 0}};
      if (dealer) items.push_back({static_cast<void*>(*dealer), 0, ZMQ_POLLIN, 0});
      auto now = clock_type::now();
      auto until = now + beat_interval;
      peer_state s = state();
      if (waiting_to_reconnect) until = std::min(until, reconnect_at);
      if (s == peer_state::connecting && dealer) until = std::min(until, register_deadline);
      if (s == peer_state::registered || s == peer_state::draining) until = std::min(until, next_beat);
      auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - now) + std::chrono::milliseconds(1);
      try {
        zmq::poll(items, std::max(wait, std::chrono::milliseconds(0)));
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
        continue;
      }
      if (items[0].revents & ZMQ_POLLIN) {
        if (!flush_outbox()) return;  // stop()
      }
      if (items.size() > 1 && (items[1].revents & ZMQ_POLLIN)) read_dealer();
      s = state();
      if (s == peer_state::stopped || s == peer_state::refused) {
        // Nothing left to do but answer stop(); results still arrive and are dropped.
        continue;
      }
      now = clock_type::now();
      if (waiting_to_reconnect && now >= reconnect_at) {
        waiting_to_reconnect = false;
        open_socket();
      } else if (s == peer_state::connecting && dealer && now >= register_deadline) {
        lose_session("no answer to ready from " + opt.endpoint + " (head down, or it refused our keys)",
                     false);
      } else if (s == peer_state::registered || s == peer_state::draining) {
        if (now - last_heard > beat_interval * liveness) {
          lose_session("head silent for " + std::to_string(liveness) + " heartbeats", false);
        } else if (now >= next_beat) {
          send_msg(heartbeat{++beat_seq, unix_now()});
          next_beat = now + beat_interval;
        }
      }
      if (state() == peer_state::draining && total_busy() == 0) {
        send_msg(peer_disconnect{drain_reason, false});
        close_for_good(peer_state::stopped, "drained");
      }
    }
  }

  // false when stop() asked the loop to end.
  bool flush_outbox() {
    std::map<std::string, int32_t> credits;
    bool keep_going = true;
    for (auto& out : outbox->take()) {
      peer_state s = state();
      bool live = dealer && (s == peer_state::registered || s == peer_state::draining);
      switch (out.type) {
        case peer_out::what::result: {
          auto b = busy.find(out.role);
          if (b != busy.end() && b->second > 0) --b->second;
          if (live && out.session == current_session && send_msg(out.result))
            ++count.results_sent;
          else
            ++count.results_dropped;
          // Credit tracks capacity - items in hand, whichever session the item came from.
          if (opt.auto_credit && s == peer_state::registered) ++credits[out.role];
          break;
        }
        case peer_out::what::credit:
          if (live && s == peer_state::registered) credits[out.role] += out.count;
          break;
        case peer_out::what::drain:
          if (s == peer_state::registered || s == peer_state::connecting) begin_drain(out.reason);
          break;
        case peer_out::what::stop:
          if (dealer && live) send_msg(peer_disconnect{out.reason, false});
          close_for_good(peer_state::stopped, out.reason);
          keep_going = false;
          break;
      }
    }
    for (const auto& [role, n] : credits) send_credit(role, n);
    return keep_going;
  }

  void read_dealer() {
    for (int n = 0; n < 512 && dealer; ++n) {
      zmq::message_t msg;
      try {
        if (!dealer->recv(msg, zmq::recv_flags::dontwait)) return;
      } catch (const zmq::error_t&) {
        return;
      }
      ++count.frames_in;
      last_heard = clock_type::now();
      handle(std::string_view(static_cast<const char*>(msg.data()), msg.size()));
    }
  }

  void reply_error(const std::string& code, const std::string& what) {
    ++count.malformed;
    spdlog::warn("wire peer '{}': bad frame from head ({}): {}", opt.peer_id, code, what);
    send_msg(wire_error{code, what, 0});
  }

  void handle(std::string_view bytes) {
    auto env = decode(bytes);
    if (!env) {
      auto v = peek_schema_version(bytes);
      return reply_error(v && *v != schema_version ? "version" : "malformed", env.message());
    }
    peer_state s = state();
    const std::string& kind = env->kind;
    if (kind == message_kind<peer_registered>::name) {
      auto r = env->as<peer_registered>();
      if (!r) return reply_error("malformed", r.message());
      if (s != peer_state::connecting) return;  // a repeated answer
      if (!r->accepted) {
        set_error("head refused registration: " + r->reason);
        spdlog::error("wire peer '{}': head refused registration: {}", opt.peer_id, r->reason);
        return close_for_good(peer_state::refused, r->reason);
      }
      beat_interval = std::chrono::milliseconds(std::max<int64_t>(1, r->heartbeat_ms));
      liveness = std::max(1, r->liveness);
      current_session = ++sessions;
      attempt = 0;
      ++count.registrations;
      next_beat = clock_type::now() + beat_interval;
      set_state(peer_state::registered, "registered with " + r->head_id);
      if (drain_requested) return begin_drain(drain_reason);
      if (opt.auto_credit)
        for (const auto& o : opt.roles) send_credit(o.role, o.capacity - busy[o.role]);
      return;
    }
    if (kind == message_kind<heartbeat>::name) return;
    if (kind == message_kind<wire_error>::name) {
      auto e = env->as<wire_error>();
      if (!e) return reply_error("malformed", e.message());
      ++count.errors_received;
      set_error("head: " + e->code + ": " + e->message);
      spdlog::warn("wire peer '{}': head says {}: {}", opt.peer_id, e->code, e->message);
      // The head does not know this connection (it restarted, or declared us dead): register again.
      if (e->code == "not_registered" && (s == peer_state::registered || s == peer_state::draining)) {
        current_session = 0;
        set_state(peer_state::connecting, "head does not know this session");
        send_ready();
      }
      return;
    }
    if (kind == message_kind<peer_disconnect>::name) {
      auto d = env->as<peer_disconnect>();
      if (!d) return reply_error("malformed", d.message());
      if (d->drain) return begin_drain("head asked: " + d->reason);
      if (s == peer_state::registered || s == peer_state::draining)
        lose_session("head said: " + d->reason, true);
      return;
    }
    if (kind == message_kind<work_item>::name) {
      auto w = env->as<work_item>();
      if (!w) return reply_error("malformed", w.message());
      if (s != peer_state::registered && s != peer_state::draining)
        return;  // no session: the head re-dispatches
      ++count.work_received;
      ++busy[w->role];
      uint64_t session = current_session;
      if (!offer(w->role) || !opt.handler) {
        work_result r;
        r.request_id = w->request_id;
        r.status = "unsupported";
        r.error = "peer '" + opt.peer_id + "' does not run role '" + w->role + "'";
        outbox->push(peer_out{peer_out::what::result, session, w->role, std::move(r), 0, {}});
        return;
      }
      {
        std::lock_guard<std::mutex> lock(jobs_mu);
        jobs.push_back(job{std::move(*w), session});
      }
      jobs_cv.notify_one();
      return;
    }
    reply_error("unexpected_kind", "a peer does not take '" + kind + "' frames");
  }

  // ---- handler threads --------------------------------------------------------------------------------

  void work_loop() {
    for (;;) {
      job j;
      {
        std::unique_lock<std::mutex> lock(jobs_mu);
        jobs_cv.wait(lock, [&] { return jobs_closed || !jobs.empty(); });
        if (jobs.empty()) return;
        j = std::move(jobs.front());
        jobs.pop_front();
      }
      auto replied = std::make_shared<std::atomic<bool>>(false);
      std::weak_ptr<impl> self = weak_from_this();
      auto started = clock_type::now();
      uint64_t request_id = j.item.request_id;
      std::string role = j.item.role;
      uint64_t session = j.session;
      work_reply reply = [self, replied, started, request_id, role, session](work_result r) {
        if (replied->exchange(true)) return;
        auto me = self.lock();
        if (!me) return;
        r.request_id = request_id;
        if (r.wall_s == 0.0) r.wall_s = std::chrono::duration<double>(clock_type::now() - started).count();
        me->outbox->push(peer_out{peer_out::what::result, session, role, std::move(r), 0, {}});
      };
      try {
        opt.handler(j.item, reply);
      } catch (const std::exception& e) {
        reply(work_result{request_id, "error", {}, std::string("handler threw: ") + e.what(), 0.0});
      } catch (...) {
        reply(work_result{request_id, "error", {}, "handler threw", 0.0});
      }
    }
  }
};

wire_peer::wire_peer(std::shared_ptr<impl> impl) : impl_(std::move(impl)) {}

expected<std::unique_ptr<wire_peer>> wire_peer::start(wire_peer_options options) {
  if (options.endpoint.empty()) return make_error("wire peer: no head endpoint to connect to");
  if (options.heartbeat_interval.count() <= 0 || options.liveness < 1)
    return make_error("wire peer: heartbeat interval must be positive and liveness at least 1");
  if (options.reconnect_min.count() <= 0 || options.reconnect_max < options.reconnect_min)
    return make_error("wire peer: need 0 < reconnect_min <= reconnect_max");
  if (!options.roles.empty() && !options.handler)
    return make_error("wire peer: roles are offered but no work handler is set");
  for (const auto& o : options.roles)
    if (o.role.empty() || o.capacity < 0)
      return make_error("wire peer: a role offer needs a name and a capacity >= 0");
  if (options.curve) {
    if (!curve_available()) return make_error("wire peer: CURVE keys are set but this libzmq has no CURVE");
    for (const auto* k : {&options.curve->server_public, &options.curve->client.public_key,
                          &options.curve->client.secret_key})
      if (!is_z85_key(*k))
        return make_error("wire peer: CURVE key '" + *k + "' is not a 40-character Z85 key");
  }
  if (options.node_id.empty()) options.node_id = host_name();
  if (options.peer_id.empty()) {
    std::random_device rd;
    char suffix[9];
    std::snprintf(suffix, sizeof suffix, "%08x", rd());
    options.peer_id = host_name() + ":" + std::to_string(::getpid()) + ":" + suffix;
  }
  options.handler_threads = std::max(1, options.handler_threads);
  auto m = std::make_shared<impl>();
  m->opt = std::move(options);
  m->beat_interval = m->opt.heartbeat_interval;
  m->liveness = m->opt.liveness;
  try {
    // A trial connect turns a malformed endpoint into an error here rather than on the I/O thread.
    zmq::socket_t probe(m->ctx, zmq::socket_type::dealer);
    probe.set(zmq::sockopt::linger, 0);
    try {
      probe.connect(m->opt.endpoint);
    } catch (const zmq::error_t& e) {
      return make_error("wire peer: cannot connect to '" + m->opt.endpoint + "': " + e.what());
    }
    probe.close();
    m->outbox = std::make_unique<wire_outbox<peer_out>>(m->ctx, "peer");
  } catch (const zmq::error_t& e) {
    return make_error(std::string("wire peer: ZeroMQ set-up failed: ") + e.what());
  }
  impl* raw = m.get();
  for (int i = 0; i < m->opt.handler_threads; ++i) m->workers.emplace_back([raw] { raw->work_loop(); });
  m->io = std::thread([raw] {
    try {
      raw->run();
    } catch (const zmq::error_t& e) {
      // e.g. an endpoint ZeroMQ cannot parse: the peer cannot go on, and says why.
      raw->set_error(std::string("wire peer: ") + e.what());
      spdlog::error("wire peer '{}': {}", raw->opt.peer_id, e.what());
      raw->close_for_good(peer_state::stopped, e.what());
    }
  });
  return std::unique_ptr<wire_peer>(new wire_peer(std::move(m)));
}

wire_peer::~wire_peer() {
  stop();
}

const std::string& wire_peer::peer_id() const {
  return impl_->opt.peer_id;
}

peer_state wire_peer::state() const {
  return impl_->state();
}

bool wire_peer::wait_for(peer_state s, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->state_mu);
  return impl_->state_cv.wait_for(lock, timeout, [&] { return impl_->state_ == s; });
}

std::string wire_peer::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->last_error_;
}

status wire_peer::grant_credit(const std::string& role, int32_t count) {
  if (count <= 0) return make_error("credit count must be positive");
  if (!impl_->offer(role)) return make_error("role '" + role + "' was not offered by this peer");
  if (impl_->state() != peer_state::registered)
    return make_error(std::string("no session to ask for work in (peer is ") + to_string(impl_->state()) +
                      ")");
  impl_->outbox->push(peer_out{peer_out::what::credit, 0, role, {}, count, {}});
  return {};
}

void wire_peer::drain(const std::string& reason) {
  impl_->outbox->push(peer_out{peer_out::what::drain, 0, {}, {}, 0, reason});
}

void wire_peer::stop() {
  std::lock_guard<std::mutex> stop_lock(impl_->stop_mu);
  if (impl_->io.joinable()) {
    impl_->outbox->push(peer_out{peer_out::what::stop, 0, {}, {}, 0, "stopping"});
    impl_->io.join();
  }
  {
    std::lock_guard<std::mutex> lock(impl_->jobs_mu);
    impl_->jobs_closed = true;
    impl_->jobs.clear();
  }
  impl_->jobs_cv.notify_all();
  for (auto& t : impl_->workers)
    if (t.joinable()) t.join();
  impl_->workers.clear();
  impl_->set_state(peer_state::stopped, "stopped");
}

wire_peer_counters wire_peer::counters() const {
  const auto& c = impl_->count;
  wire_peer_counters out;
  out.registrations = c.registrations;
  out.connect_attempts = c.connect_attempts;
  out.frames_in = c.frames_in;
  out.frames_out = c.frames_out;
  out.work_received = c.work_received;
  out.results_sent = c.results_sent;
  out.results_dropped = c.results_dropped;
  out.credits_sent = c.credits_sent;
  out.errors_received = c.errors_received;
  out.malformed = c.malformed;
  return out;
}

}  // namespace crucible::runtime
