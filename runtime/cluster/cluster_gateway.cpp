#include "runtime/cluster/cluster_gateway.hpp"

#include "runtime/hosting/actor_failures.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/cluster/control_policy.hpp"
#include "runtime/cluster/listen_policy.hpp"
#include "runtime/cluster/remote_result_check.hpp"
#include "runtime/cluster/stage_codec.hpp"
#include "runtime/cluster/wire_head.hpp"
#include "runtime/hosting/run_control.hpp"

namespace crucible::runtime {
namespace {

using namespace std::chrono_literals;

// Events of the wire head's I/O thread, handed to the gateway actor (its callback must not block).
struct event_queue {
  std::mutex mu;
  std::deque<wire_event> events;
  caf::weak_actor_ptr gateway;
};

// ---- the stage proxy: one pool member standing for one unit of a peer's capacity ----------------------

struct proxy_state {
  std::map<uint64_t, caf::response_promise> open;  // requests not yet answered, by local sequence
  uint64_t next = 0;
  bool draining = false;  // the peer finishes what it holds and takes nothing new
  static inline const char* name = "remote_stage";
};

using proxy_actor = caf::stateful_actor<proxy_state>;

caf::behavior remote_stage(proxy_actor* self, caf::actor gateway, std::string peer, std::string role,
                           double timeout_s) {
  return {
      // The stage's work goes to the peer as a work item; its answer, checked, fills the candidate's slot.
      [=](stage_atom, stage_request& req) {
        auto rp = self->make_response_promise();
        if (self->state.draining) {  // the conductor tries another member at once
          rp.deliver(caf::make_error(caf::sec::runtime_error, "node " + peer + " is draining"));
          return rp;
        }
        uint64_t seq = self->state.next++;
        self->state.open[seq] = rp;
        work_item item = encode_stage_work(req, role, timeout_s, 1);
        auto s = std::make_shared<scored_candidate>(std::move(req.scored));
        const std::string stage = req.stage;
        auto settle = [=](auto&& deliver) {
          auto it = self->state.open.find(seq);
          if (it == self->state.open.end()) return;
          auto p = it->second;
          self->state.open.erase(it);
          deliver(p);
          if (self->state.draining && self->state.open.empty()) self->quit();
        };
        self->request(gateway, caf::infinite, remote_atom::value, peer, item)
            .then(
                [=](work_result& r) {
                  settle([&](caf::response_promise& p) {
                    status st = apply_stage_result(stage, r, *s);
                    if (st && stage_info_of(stage).slot == stage_slot::bench) {
                      // A benchmark the head cannot repeat: used only if its figures add up (another member
                      // measures it again otherwise).
                      if (st = check_remote_bench(s->bench); !st) {
                        spdlog::warn("cluster: {}'s benchmark of {} not used: {}", peer, s->cand.id,
                                     st.message());
                        self->send(gateway, remote_atom::value, std::string("inconsistent_result"), peer);
                        st = make_error("node " + peer + " sent a benchmark result that does not add up (" +
                                        st.message() + ")");
                      }
                    }
                    if (!st)
                      p.deliver(caf::make_error(caf::sec::runtime_error, st.message()));
                    else
                      p.deliver(std::move(*s));
                  });
                },
                [=](caf::error& err) {
                  settle([&](caf::response_promise& p) { p.deliver(std::move(err)); });
                });
        return rp;
      },
      [=](stop_atom, bool drain) {
        // The peer drains: what it holds is answered through this member, which then leaves the pool.
        if (!drain) return;
        self->state.draining = true;
        if (self->state.open.empty()) self->quit();
      },
      [=](stop_atom, const std::string& why) {
        // The peer is gone: whatever it still owed is failed here, so the conductor re-dispatches it now.
        for (auto& [seq, p] : self->state.open) p.deliver(caf::make_error(caf::sec::runtime_error, why));
        self->state.open.clear();
        self->quit();
      },
  };
}

// ---- the gateway ---------------------------------------------------------------------------------------

struct pending_work {
  std::string peer;
  std::string role;
  work_item item;
  caf::response_promise rp;
};

struct peer_entry {
  peer_ready info;
  std::vector<caf::actor> members;
};

struct gateway_state {
  std::shared_ptr<const run_context> run;
  caf::actor supervisor;
  std::unique_ptr<wire_head> head;
  std::shared_ptr<event_queue> queue;
  std::map<std::string, peer_entry> peers;
  std::map<uint64_t, pending_work> in_flight;                                      // by request id
  std::map<std::string, std::map<std::string, std::deque<pending_work>>> waiting;  // peer -> role -> work
  uint64_t next_request = 1;
  std::map<std::string, int64_t> rejected;  // results refused after they arrived, by reason (status_report)
  static inline const char* name = "cluster_gateway";
};

using gateway_actor = caf::stateful_actor<gateway_state>;

void fail(pending_work& w, const std::string& why) {
  w.rp.deliver(caf::make_error(caf::sec::runtime_error, why));
}

// Sends what waits for `peer`'s `role` while the head accepts it (credit); stops at the first refusal.
void flush(gateway_actor* self, const std::string& peer, const std::string& role) {
  auto& q = self->state.waiting[peer][role];
  while (!q.empty()) {
    auto& w = q.front();
    auto sent = self->state.head->send_work(peer, w.item);
    if (!sent) {
      if (sent.message().find("no credit") != std::string::npos) return;  // wait for the peer's credit
      fail(w, sent.message());
      q.pop_front();
      continue;
    }
    self->state.in_flight[*sent] = std::move(w);
    q.pop_front();
  }
}

void drop_peer(gateway_actor* self, const std::string& peer, const std::string& why,
               const std::vector<uint64_t>& in_flight) {
  for (auto id : in_flight)
    if (auto it = self->state.in_flight.find(id); it != self->state.in_flight.end()) {
      fail(it->second, why);
      self->state.in_flight.erase(it);
    }
  // Anything else still recorded for it (a result that can no longer come).
  for (auto it = self->state.in_flight.begin(); it != self->state.in_flight.end();)
    if (it->second.peer == peer) {
      fail(it->second, why);
      it = self->state.in_flight.erase(it);
    } else {
      ++it;
    }
  for (auto& [role, q] : self->state.waiting[peer])
    for (auto& w : q) fail(w, why);
  self->state.waiting.erase(peer);
  if (auto it = self->state.peers.find(peer); it != self->state.peers.end()) {
    for (auto& m : it->second.members) self->send(m, stop_atom::value, why);
    self->state.peers.erase(it);
  }
}

void add_nodes(gateway_actor* self, status_report& r) {
  std::map<std::string, int64_t> queued_by_role;
  for (const auto& snap : self->state.head->peers()) {
    node_status n;
    n.peer_id = snap.peer_id;
    n.node_id = snap.info.node_id;
    n.host = snap.info.host;
    for (const auto& o : snap.info.roles) n.roles[o.role] = o.capacity;
    for (const auto& d : snap.info.devices)
      n.devices.push_back(d.kind + (d.index >= 0 ? ":" + std::to_string(d.index) : "") +
                          (d.name.empty() ? "" : " " + d.name));
    n.in_flight = static_cast<int32_t>(snap.in_flight.size());
    for (const auto& [role, q] : self->state.waiting[snap.peer_id]) {
      n.queued += static_cast<int32_t>(q.size());
      queued_by_role[role] += static_cast<int64_t>(q.size());
    }
    n.silent_s = snap.silent_s;
    n.draining = snap.draining;
    r.nodes.push_back(std::move(n));
  }
  for (auto& rs : r.roles)
    if (auto it = queued_by_role.find(rs.role); it != queued_by_role.end()) rs.queued += it->second;
  // Everything refused from the wire: the head's frame counters and the results refused here.
  const auto c = self->state.head->counters();
  const std::pair<const char*, uint64_t> frames[] = {
      {"malformed", c.malformed},        {"wrong_version", c.wrong_version},
      {"unregistered", c.unregistered},  {"unexpected_kind", c.unexpected_kind},
      {"stale_result", c.stale_results}, {"refused_registration", c.refused},
      {"auth_denied", c.auth_denied},    {"handshake_failed", c.handshake_failed}};
  for (const auto& [why, n] : frames)
    if (n > 0) r.rejected[why] = static_cast<int64_t>(n);
  for (const auto& [why, n] : self->state.rejected) r.rejected[why] += n;
}

// The run's status (run_control) with the cluster's nodes and what was refused from the wire.
void collect_status(gateway_actor* self, std::function<void(status_report)> done) {
  collect_run_status(self, self->state.supervisor, [=](status_report r) {
    add_nodes(self, r);
    done(std::move(r));
  });
}

void answer(gateway_actor* self, const std::string& client, status_report r) {
  if (auto st = self->state.head->reply(client, encode(r, "head")); !st)
    spdlog::warn("cluster: could not answer a control client: {}", st.message());
}

// A control command from `origin`, from the wire or the dashboard; `respond` gets the answer.
void on_control(gateway_actor* self, const control& c, const control_origin& origin,
                std::function<void(status_report)> respond) {
  auto reply_error = [=](const std::string& why) {
    status_report r;
    r.error = why;
    respond(std::move(r));
  };
  auto with_status = [=] { collect_status(self, respond); };
  if (std::string no = control_refusal(c, origin); !no.empty()) {
    spdlog::warn("cluster: {}", no);
    ++self->state.rejected["control_refused"];
    return reply_error(no);
  }
  if (c.command == "status") {
    with_status();
  } else if (c.command == "scale") {
    auto node = c.args.find("node");
    if (node != c.args.end() && !node->second.empty()) {
      // A node's capacity is what it registered with; it shrinks by draining it (count 0), and grows by
      // starting another `crucible node`.
      if (c.count != 0)
        return reply_error(
            "a node serves what it registered; scale a node down with --count 0 (it drains), "
            "or start another `crucible node` to add capacity");
      std::string peer;
      for (const auto& [id, p] : self->state.peers)
        if (id == node->second || p.info.node_id == node->second) peer = id;
      if (peer.empty()) return reply_error("no registered node or peer '" + node->second + "'");
      if (auto st = self->state.head->request_drain(peer, "scaled down by an operator"); !st)
        return reply_error(st.message());
      return with_status();
    }
    scale_role(self, self->state.supervisor, c, with_status, respond);
  } else {
    reply_error("unknown command '" + c.command + "' (the head takes status and scale)");
  }
}

void on_event(gateway_actor* self, wire_event& ev) {
  if (auto* j = std::get_if<peer_joined>(&ev)) {
    auto& entry = self->state.peers[j->peer_id];
    entry.info = j->info;
    const double timeout_s = self->state.run->cfg.dispatch.stage_timeout_s;
    std::string summary;
    for (const auto& offer : j->info.roles) {
      for (int k = 0; k < std::max(1, offer.capacity); ++k) {
        auto m =
            self->spawn(remote_stage, caf::actor_cast<caf::actor>(self), j->peer_id, offer.role, timeout_s);
        entry.members.push_back(m);
        self->send(self->state.supervisor, join_atom::value, offer.role, m);
      }
      summary += (summary.empty() ? "" : ", ") + offer.role + " x" + std::to_string(offer.capacity);
    }
    spdlog::info("cluster: {} joined from {} (node {}): {}", j->peer_id, j->info.host, j->info.node_id,
                 summary);
  } else if (auto* l = std::get_if<peer_left>(&ev)) {
    spdlog::warn("cluster: {} left ({}); {} work items in flight are re-dispatched", l->peer_id, l->reason,
                 l->in_flight.size());
    drop_peer(self, l->peer_id, "node " + l->peer_id + " left (" + l->reason + ")", l->in_flight);
  } else if (auto* d = std::get_if<peer_draining>(&ev)) {
    spdlog::info("cluster: {} is draining ({})", d->peer_id, d->reason);
    // No new work reaches it: its members leave the pools; what it holds is finished and answered.
    if (auto it = self->state.peers.find(d->peer_id); it != self->state.peers.end()) {
      for (auto& [role, q] : self->state.waiting[d->peer_id])
        for (auto& w : q) fail(w, "node " + d->peer_id + " is draining");
      self->state.waiting.erase(d->peer_id);
      for (auto& m : it->second.members) self->send(m, stop_atom::value, true);
    }
  } else if (auto* w = std::get_if<work_done>(&ev)) {
    auto it = self->state.in_flight.find(w->result.request_id);
    if (it == self->state.in_flight.end()) return;
    it->second.rp.deliver(std::move(w->result));
    self->state.in_flight.erase(it);
  } else if (auto* c = std::get_if<credit_granted>(&ev)) {
    flush(self, c->peer_id, c->role);
  } else if (auto* r = std::get_if<control_request>(&ev)) {
    const std::string client = r->client;
    on_control(self, r->command, {r->address, r->public_key},
               [=](status_report report) { answer(self, client, std::move(report)); });
  }
}

caf::behavior gateway(gateway_actor* self, std::shared_ptr<const run_context> run, caf::actor supervisor,
                      std::shared_ptr<event_queue> queue, std::shared_ptr<std::unique_ptr<wire_head>> head) {
  self->state.run = run;
  self->state.supervisor = supervisor;
  self->state.queue = queue;
  self->state.head = std::move(*head);
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto& [peer, e] : self->state.peers)
      for (auto& m : e.members) self->send(m, stop_atom::value, std::string("the head is stopping"));
    self->state.head.reset();
    self->quit(msg.reason);
  });
  return {
      [=](wire_atom) {
        std::deque<wire_event> batch;
        {
          std::lock_guard<std::mutex> lock(queue->mu);
          batch.swap(queue->events);
        }
        for (auto& ev : batch) on_event(self, ev);
      },
      [=](remote_atom, const std::string& peer, work_item item) -> caf::result<work_result> {
        auto rp = self->make_response_promise();
        if (!self->state.peers.count(peer)) {
          rp.deliver(caf::make_error(caf::sec::runtime_error, "node " + peer + " is gone"));
          return rp;
        }
        item.request_id = self->state.next_request++;
        std::string role = item.role;
        self->state.waiting[peer][role].push_back({peer, role, std::move(item), rp});
        flush(self, peer, role);
        return rp;
      },
      [=](remote_atom, const std::string& rejected_why, const std::string& peer) {
        // A node whose results do not add up is not asked again: it drains, and its work goes elsewhere.
        ++self->state.rejected[rejected_why];
        if (!self->state.peers.count(peer)) return;
        if (auto st = self->state.head->request_drain(peer, "its benchmark results do not add up"); !st)
          spdlog::warn("cluster: could not drain {}: {}", peer, st.message());
      },
      [=](status_atom) -> caf::result<status_report> {
        auto rp = self->make_response_promise();
        collect_status(self, [=](status_report r) mutable { rp.deliver(std::move(r)); });
        return rp;
      },
      // The dashboard's commands: the same path as the wire's, with the HTTP client's origin.
      [=](const control& c, const std::string& address,
          const std::string& key) -> caf::result<status_report> {
        auto rp = self->make_response_promise();
        on_control(self, c, {address, key}, [=](status_report r) mutable { rp.deliver(std::move(r)); });
        return rp;
      },
      [=](stop_atom) {
        for (auto& [id, w] : self->state.in_flight) fail(w, "the head is stopping");
        self->state.in_flight.clear();
        for (auto& [peer, roles] : self->state.waiting)
          for (auto& [role, q] : roles)
            for (auto& w : q) fail(w, "the head is stopping");
        self->state.waiting.clear();
        for (auto& [peer, e] : self->state.peers)
          for (auto& m : e.members) self->send(m, stop_atom::value, std::string("the head is stopping"));
        self->state.peers.clear();
        self->state.head.reset();
        self->quit();
      },
  };
}

}  // namespace

expected<gateway_handle> spawn_cluster_gateway(caf::actor_system& sys, std::shared_ptr<const run_context> run,
                                               caf::actor supervisor) {
  const auto& cl = run->cfg.cluster;
  auto listen = plan_listen(cl);
  if (!listen) return listen.err();
  wire_head_options opt;
  opt.endpoint = listen->endpoint;
  opt.head_id = "head";
  opt.heartbeat_interval = std::chrono::milliseconds(cl.heartbeat_ms);
  opt.liveness = static_cast<int>(cl.liveness);
  opt.max_capacity = static_cast<int32_t>(std::min<int64_t>(run->cfg.run.max_role_count, 1 << 20));
  opt.role_refusal = node_refusal;
  if (!cl.secret_key.empty()) {
    if (cl.authorized_keys.empty())
      return make_error("cluster.secret_key is set but cluster.authorized_keys is not: no node could join");
    auto keys = load_curve_server(cl.secret_key, cl.authorized_keys);
    if (!keys) return make_error("cluster: " + keys.message());
    opt.curve = *keys;
  }
  auto queue = std::make_shared<event_queue>();
  opt.on_event = [queue](wire_event ev) {
    caf::actor target;
    {
      std::lock_guard<std::mutex> lock(queue->mu);
      queue->events.push_back(std::move(ev));
      target = caf::actor_cast<caf::actor>(queue->gateway);
    }
    if (target) caf::anon_send(target, wire_atom::value);
  };
  auto head = wire_head::start(std::move(opt));
  if (!head) return make_error("cluster.listen: " + head.message());
  gateway_handle out;
  out.endpoint = (*head)->endpoint();
  out.public_key = (*head)->public_key();
  out.note = listen->note;
  auto holder = std::make_shared<std::unique_ptr<wire_head>>(std::move(*head));
  out.actor = sys.spawn(gateway, run, supervisor, queue, holder);
  {
    std::lock_guard<std::mutex> lock(queue->mu);
    queue->gateway = caf::actor_cast<caf::weak_actor_ptr>(out.actor);
  }
  caf::anon_send(out.actor, wire_atom::value);  // events that arrived before the handle was known
  return out;
}

}  // namespace crucible::runtime
