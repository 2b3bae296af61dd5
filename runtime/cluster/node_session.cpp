#include "runtime/cluster/node_session.hpp"

#include "runtime/hosting/actor_failures.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/cluster/stage_codec.hpp"
#include "runtime/cluster/wire_peer.hpp"
#include "runtime/config/split_fields.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::runtime {
namespace {

using namespace std::chrono_literals;

std::atomic<bool> node_stop{false};

extern "C" void on_node_signal(int) {
  node_stop.store(true);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "node";
  return buf;
}

// The node's own actors: spawned through the registry, restarted at the same index when one dies.
struct keeper_state {
  std::shared_ptr<const run_context> run;
  std::shared_ptr<const role_registry> registry;
  std::map<caf::actor_addr, std::pair<std::string, int>> owner;
  std::map<std::string, std::vector<caf::actor>> pools;
  static inline const char* name = "node_keeper";
};

using keeper_actor = caf::stateful_actor<keeper_state>;

bool start(keeper_actor* self, const std::string& role, int index) {
  const auto* factory = self->state.registry->find(role);
  if (!factory) return false;
  role_context ctx{self->state.run, caf::actor_cast<caf::actor>(self), role, index, {}};
  caf::actor a = (*factory)(self->system(), ctx);
  if (!a) return false;
  self->monitor(a);
  self->state.owner[a.address()] = {role, index};
  auto& pool = self->state.pools[role];
  if (static_cast<int>(pool.size()) <= index) pool.resize(static_cast<size_t>(index) + 1);
  pool[static_cast<size_t>(index)] = a;
  return true;
}

caf::behavior keeper(keeper_actor* self, std::shared_ptr<const run_context> run,
                     std::shared_ptr<const role_registry> registry, std::map<std::string, int64_t> roles) {
  self->state.run = run;
  self->state.registry = registry;
  for (const auto& [role, n] : roles)
    for (int i = 0; i < n; ++i)
      if (!start(self, role, i)) spdlog::error("node: could not start {} #{}", role, i);
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto it = self->state.owner.find(dm.source);
    if (it == self->state.owner.end()) return;
    auto [role, index] = it->second;
    self->state.owner.erase(it);
    if (dm.reason == caf::exit_reason::user_shutdown) return;
    spdlog::warn("node: {} #{} died ({}); restarting it", role, index, caf::to_string(dm.reason));
    start(self, role, index);
  });
  return {
      [=](pool_atom, const std::string& role) { return self->state.pools[role]; },
      [=](stop_atom) {
        for (auto& [role, pool] : self->state.pools)
          for (auto& a : pool) self->send_exit(a, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

// Hands each unit of a role's capacity to one work item at a time: the head never sends more than the
// capacity (credits), so a free member is always there.
class member_slots {
 public:
  void set(const std::string& role, std::vector<caf::actor> members) {
    std::lock_guard<std::mutex> lock(mu_);
    members_[role] = std::move(members);
    busy_[role].assign(members_[role].size(), false);
  }
  // The index of a free member, refreshed from `fresh` (restarted members have new handles).
  std::pair<caf::actor, size_t> take(const std::string& role) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = members_[role];
    auto& b = busy_[role];
    for (size_t i = 0; i < m.size(); ++i)
      if (!b[i]) {
        b[i] = true;
        return {m[i], i};
      }
    return {caf::actor{}, 0};
  }
  void give(const std::string& role, size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& b = busy_[role];
    if (i < b.size()) b[i] = false;
  }
  void refresh(const std::string& role, size_t i, caf::actor a) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = members_[role];
    if (i < m.size()) m[i] = std::move(a);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<caf::actor>> members_;
  std::map<std::string, std::vector<bool>> busy_;
};

// Runs one stage request on a local member and returns its answer as a work_result.
work_result serve(caf::actor_system& sys, const caf::actor& member, const work_item& item,
                  std::chrono::milliseconds timeout) {
  work_result out;
  out.request_id = item.request_id;
  auto req = decode_stage_work(item);
  if (!req) {
    out.status = "error";
    out.error = req.message();
    return out;
  }
  caf::scoped_actor self{sys};
  self->request(member, timeout, stage_atom::value, std::move(*req))
      .receive([&](scored_candidate& answer) { out = encode_stage_answer(item, answer); },
               [&](caf::error& err) {
                 out.status = "error";
                 out.error = "stage " + item.stage + " failed on the node: " + error_sentence(err);
               });
  return out;
}

// The non-empty fields of a command-line list ("compiler=2,,benchmarker" -> two).
std::vector<std::string> list_items(const std::string& s) {
  std::vector<std::string> out;
  for (auto& f : split_fields(s, ','))
    if (!f.empty()) out.push_back(std::move(f));
  return out;
}

}  // namespace

void request_node_stop() {
  node_stop.store(true);
}

expected<node_options> resolve_node_options(const config& cfg, const std::string& join,
                                            const std::string& roles, const std::string& devices,
                                            const std::string& node_id) {
  node_options o;
  o.join = join.empty() ? cfg.cluster.join : join;
  if (o.join.empty())
    return make_error("--join: the head's endpoint is needed (or cluster.join in the config)");
  if (roles.empty()) {
    for (const auto& [r, n] : cfg.cluster.node_roles)
      if (n > 0) o.roles[r] = n;
  } else {
    for (const auto& part : list_items(roles)) {
      auto eq = part.find('=');
      std::string r = part.substr(0, eq);
      int64_t n = 1;
      if (eq != std::string::npos) {
        try {
          n = std::stoll(part.substr(eq + 1));
        } catch (const std::exception&) {
          return make_error("--roles: '" + part + "': expected role or role=count");
        }
      }
      if (r.empty() || n < 1)
        return make_error("--roles: '" + part + "': expected role or role=count (count >= 1)");
      o.roles[r] = n;
    }
  }
  for (const auto& [role, n] : o.roles)
    if (auto no = node_refusal(role); !no.empty()) return make_error("--roles: " + role + no);
  if (o.roles.empty()) return make_error("--roles: a node needs at least one role");
  if (devices.empty()) {
    o.devices = cfg.cluster.node_devices;
  } else {
    for (const auto& d : list_items(devices)) {
      try {
        size_t used = 0;
        int64_t v = std::stoll(d, &used);
        if (used != d.size() || v < 0) throw std::invalid_argument(d);
        o.devices.push_back(v);
      } catch (const std::exception&) {
        return make_error("--devices: '" + d + "': expected device indices like 0,1");
      }
    }
  }
  o.node_id = node_id.empty() ? host_name() + "-" + std::to_string(getpid()) : node_id;
  return o;
}

expected<node_summary> run_node(std::shared_ptr<const run_context> run,
                                std::shared_ptr<const role_registry> registry, const node_options& options) {
  for (const auto& [role, n] : options.roles)
    if (!registry->find(role)) {
      std::string known;
      for (const auto& r : registry->roles()) known += (known.empty() ? "" : ", ") + r;
      return make_error("--roles: no such role '" + role + "' (known roles: " + known + ")");
    }
  const auto& cl = run->cfg.cluster;
  wire_peer_options po;
  po.endpoint = options.join;
  po.node_id = options.node_id;
  po.heartbeat_interval = std::chrono::milliseconds(cl.heartbeat_ms);
  po.liveness = static_cast<int>(cl.liveness);
  if (!cl.secret_key.empty()) {
    if (cl.server_key.empty())
      return make_error("cluster.secret_key is set but cluster.server_key (the head's) is not");
    auto keys = load_curve_client(cl.secret_key, cl.server_key);
    if (!keys) return make_error("cluster: " + keys.message());
    po.curve = *keys;
  }
  int total = 0;
  for (const auto& [role, n] : options.roles) {
    role_offer offer;
    offer.role = role;
    offer.capacity = static_cast<int32_t>(n);
    offer.device = role == "benchmarker" && !options.devices.empty() ? 0 : -1;
    po.roles.push_back(offer);
    total += static_cast<int>(n);
  }
  if (run->cfg.target == "cuda") {
    const auto& devs = options.devices.empty() ? run->cfg.cuda.devices : options.devices;
    for (auto d : devs) po.devices.push_back(device_info{"cuda", static_cast<int32_t>(d), "", 0});
  } else {
    po.devices.push_back(device_info{"cpu", -1, "", 0});
  }
  po.labels["target"] = run->cfg.target;
  po.handler_threads = std::max(1, total);

  node_stop.store(false);
  auto previous_int = std::signal(SIGINT, on_node_signal);
  auto previous_term = std::signal(SIGTERM, on_node_signal);
  node_summary summary;
  {
    caf::actor_system_config cfg;
    cfg.set("logger.verbosity", caf::atom("quiet"));
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    auto keep = sys.spawn(keeper, run, registry, options.roles);
    auto slots = std::make_shared<member_slots>();
    for (const auto& [role, n] : options.roles) {
      std::vector<caf::actor> members;
      self->request(keep, 5s, pool_atom::value, role)
          .receive([&](std::vector<caf::actor>& m) { members = std::move(m); }, [&](caf::error&) {});
      slots->set(role, std::move(members));
    }
    auto served = std::make_shared<std::atomic<int64_t>>(0),
         failed = std::make_shared<std::atomic<int64_t>>(0);
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::duration<double>(run->cfg.dispatch.stage_timeout_s));
    caf::actor_system* system = &sys;
    po.handler = [=](const work_item& item, work_reply reply) {
      auto [member, slot] = slots->take(item.role);
      work_result r;
      if (!member) {
        r.request_id = item.request_id;
        r.status = "error";
        r.error = "node has no free " + item.role + " (more work than the credit it gave)";
      } else {
        r = serve(*system, member, item, timeout);
        if (r.status != "ok") {
          // The member may have died and been restarted: take the fresh handle for the next item.
          caf::scoped_actor s{*system};
          s->request(keep, 5s, pool_atom::value, item.role)
              .receive(
                  [&](std::vector<caf::actor>& m) {
                    if (slot < m.size()) slots->refresh(item.role, slot, m[slot]);
                  },
                  [&](caf::error&) {});
        }
        slots->give(item.role, slot);
      }
      ++*served;
      if (r.status != "ok") ++*failed;
      reply(std::move(r));
    };
    po.on_state = [](peer_state st, const std::string& why) {
      spdlog::info("node: {}{}{}", to_string(st), why.empty() ? "" : ": ", why);
    };
    auto peer = wire_peer::start(std::move(po));
    if (!peer) {
      self->send(keep, stop_atom::value);
      std::signal(SIGINT, previous_int);
      std::signal(SIGTERM, previous_term);
      return make_error("cluster: " + peer.message());
    }
    std::string roles_text;
    for (const auto& [role, n] : options.roles)
      roles_text += (roles_text.empty() ? "" : ", ") + role + " x" + std::to_string(n);
    std::fprintf(stdout, "crucible node %s: %s, joining %s\n", options.node_id.c_str(), roles_text.c_str(),
                 options.join.c_str());
    std::fflush(stdout);
    while (!node_stop.load()) {
      if ((*peer)->state() == peer_state::stopped) break;  // drained at the head's request (crucible scale)
      if ((*peer)->state() == peer_state::refused) {
        std::string why = (*peer)->last_error();
        (*peer)->stop();
        self->send(keep, stop_atom::value);
        std::signal(SIGINT, previous_int);
        std::signal(SIGTERM, previous_term);
        return make_error("the head refused this node: " + why);
      }
      std::this_thread::sleep_for(100ms);
    }
    // Drain: finish and answer what is in hand, then leave.
    (*peer)->drain("node stopping");
    (*peer)->wait_for(peer_state::stopped, timeout + 10s);
    summary.registrations = static_cast<int64_t>((*peer)->counters().registrations);
    (*peer)->stop();
    summary.served = served->load();
    summary.failed = failed->load();
    self->send(keep, stop_atom::value);
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  return summary;
}

}  // namespace crucible::runtime
