#include "runtime/cluster/launch_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "runtime/config/split_fields.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

extern char** environ;

namespace crucible::runtime {
namespace {

constexpr size_t max_hosts = 65536;

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A non-negative integer of at most 18 digits (no overflow), or nothing.
bool parse_count(const std::string& s, int64_t& out) {
  std::string t = trim(s);
  if (!all_digits(t) || t.size() > 18) return false;
  out = std::stoll(t);
  return true;
}

// The host part of a tcp:// endpoint, brackets of an IPv6 address removed; empty when not tcp://.
std::string listen_host(const std::string& listen) {
  const std::string scheme = "tcp://";
  if (listen.rfind(scheme, 0) != 0) return "";
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon < scheme.size()) return "";
  std::string host = listen.substr(scheme.size(), colon - scheme.size());
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

bool is_wildcard(const std::string& host) {
  return host == "*" || host == "0.0.0.0" || host == "::";
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 || host == "lo";
}

// Splits on commas outside brackets; brackets must pair up and not nest.
expected<std::vector<std::string>> split_hostlist(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  bool open = false;
  for (char ch : list) {
    if (ch == '[') {
      if (open)
        return make_error("host list '" + list + "': nested '[' (a bracket group holds numbers only)");
      open = true;
    } else if (ch == ']') {
      if (!open) return make_error("host list '" + list + "': ']' without a '[' before it");
      open = false;
    } else if (ch == ',' && !open) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += ch;
  }
  if (open) return make_error("host list '" + list + "': '[' never closed");
  out.push_back(cur);
  return out;
}

// One bracket group's values: "01-03,07" -> 01, 02, 03, 07 (each value as wide as the range's start).
expected<std::vector<std::string>> expand_group(const std::string& group, const std::string& name) {
  if (group.empty()) return make_error("host list: '" + name + "' has empty brackets");
  std::vector<std::string> out;
  for (const auto& item : split_fields(group, ',')) {
    auto dash = item.find('-');
    std::string lo = item.substr(0, dash), hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi))
      return make_error("host list: '" + item + "' in '" + name +
                        "': expected a number or a range N-M of digits (e.g. [01-03,07])");
    if (lo.size() > 18 || hi.size() > 18)
      return make_error("host list: '" + item + "' in '" + name + "': number too long");
    int64_t a = std::stoll(lo), b = std::stoll(hi);
    if (b < a)
      return make_error("host list: range '" + item + "' in '" + name + "' runs backwards (" + lo + " > " +
                        hi + ")");
    if (static_cast<uint64_t>(b - a) + 1 + out.size() > max_hosts)
      return make_error("host list: '" + name + "' expands to more than " + std::to_string(max_hosts) +
                        " hosts");
    for (int64_t v = a; v <= b; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < lo.size()) s.insert(0, lo.size() - s.size(), '0');
      out.push_back(std::move(s));
    }
  }
  return out;
}

const std::string* find_env(const environment& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = env.find(n);
    if (it != env.end() && !trim(it->second).empty()) return &it->second;
  }
  return nullptr;
}

// Where task `procid` runs: its host's index, its index on the host, and how many tasks share the host.
// Block distribution (Slurm's default) when the tasks per host are known; else one task per host while
// there are hosts enough, cyclic beyond.
struct task_place {
  size_t host = 0;
  int64_t localid = 0;
  int64_t on_host = 1;
};

task_place place_task(int64_t procid, const std::vector<int64_t>& tasks_per_host, size_t hosts,
                      int64_t ntasks) {
  task_place p;
  if (!tasks_per_host.empty()) {
    int64_t first = 0;
    for (size_t h = 0; h < tasks_per_host.size(); ++h) {
      if (procid < first + tasks_per_host[h]) return task_place{h, procid - first, tasks_per_host[h]};
      first += tasks_per_host[h];
    }
  }
  if (hosts == 0) return p;
  int64_t n = static_cast<int64_t>(hosts);
  p.host = static_cast<size_t>(procid % n);
  p.localid = procid / n;
  p.on_host = ntasks / n + (static_cast<int64_t>(p.host) < ntasks % n ? 1 : 0);
  return p;
}

placed_role place(const config& cfg, const std::string& role, int64_t count,
                  const std::vector<int64_t>& devices) {
  placed_role r{role, count, {}};
  if (cfg.target == "cuda" && role == "benchmarker" && !devices.empty())
    for (int64_t i = 0; i < count; ++i) r.devices.push_back(devices[static_cast<size_t>(i) % devices.size()]);
  return r;
}

// The head's actors: the fixed roles first, then every other role with a count (local pipeline stages,
// plugin roles), benchmarkers on cuda.devices.
std::vector<placed_role> head_actors(const config& cfg) {
  std::vector<placed_role> out;
  for (const auto& role : head_roles()) {
    auto it = cfg.roles.find(role);
    if (it != cfg.roles.end() && it->second > 0)
      out.push_back(place(cfg, role, it->second, cfg.cuda.devices));
  }
  for (const auto& [role, n] : cfg.roles)
    if (n > 0 && !is_head_role(role)) out.push_back(place(cfg, role, n, cfg.cuda.devices));
  return out;
}

int64_t count_of(const std::vector<placed_role>& actors, const std::string& role) {
  int64_t n = 0;
  for (const auto& a : actors)
    if (a.role == role) n += a.count;
  return n;
}

void warn_once(std::vector<std::string>& warnings, const std::string& w) {
  if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
}

// Benchmarkers that share a GPU time each other's kernels.
void warn_shared_gpus(std::vector<std::string>& warnings, const std::string& who, const placed_role& r,
                      const std::string& key) {
  std::set<int64_t> distinct(r.devices.begin(), r.devices.end());
  if (r.devices.size() <= distinct.size()) return;
  warn_once(warnings, who + ": " + std::to_string(r.devices.size()) + " benchmarkers on " +
                          std::to_string(distinct.size()) +
                          " GPU(s): benchmarkers that share a GPU disturb " +
                          "each other's timings (one per GPU: set " + key + " to " +
                          std::to_string(distinct.size()) + ")");
}

}  // namespace

environment current_environment() {
  environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

expected<std::vector<std::string>> expand_slurm_hostlist(const std::string& list_in) {
  std::string list = trim(list_in);
  if (list.empty()) return make_error("host list is empty");
  auto parts = split_hostlist(list);
  if (!parts) return parts.err();
  std::vector<std::string> hosts;
  for (const auto& part : *parts) {
    if (part.empty())
      return make_error("host list '" + list +
                        "': an empty host name (two commas in a row, or one at an end)");
    if (std::any_of(part.begin(), part.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)); }))
      return make_error("host list '" + list + "': '" + part +
                        "' holds a space (names are separated by commas)");
    std::vector<std::string> names = {""};
    size_t i = 0;
    while (i < part.size()) {
      if (part[i] == '[') {
        size_t close = part.find(']', i);
        auto values = expand_group(part.substr(i + 1, close - i - 1), part);
        if (!values) return values.err();
        if (names.size() * values->size() + hosts.size() > max_hosts)
          return make_error("host list: '" + part + "' expands to more than " + std::to_string(max_hosts) +
                            " hosts");
        std::vector<std::string> next;
        next.reserve(names.size() * values->size());
        for (const auto& n : names)
          for (const auto& v : *values) next.push_back(n + v);
        names.swap(next);
        i = close + 1;
      } else {
        size_t open = part.find('[', i);
        std::string literal = part.substr(i, open == std::string::npos ? std::string::npos : open - i);
        for (auto& n : names) n += literal;
        i = open == std::string::npos ? part.size() : open;
      }
    }
    hosts.insert(hosts.end(), names.begin(), names.end());
  }
  return hosts;
}

expected<std::vector<int64_t>> expand_slurm_tasks_per_node(const std::string& text_in) {
  std::string text = trim(text_in);
  if (text.empty()) return make_error("tasks per node: empty");
  std::vector<int64_t> out;
  for (const auto& item : split_fields(text, ',')) {
    std::string count = item, times = "1";
    auto paren = item.find('(');
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')')
        return make_error("tasks per node '" + text + "': '" + item + "': expected N or N(xM)");
      count = item.substr(0, paren);
      times = item.substr(paren + 2, item.size() - paren - 3);
    }
    int64_t n = 0, m = 0;
    if (!parse_count(count, n) || !parse_count(times, m) || m < 1)
      return make_error("tasks per node '" + text + "': '" + item + "': expected N or N(xM)");
    if (out.size() + static_cast<uint64_t>(m) > max_hosts)
      return make_error("tasks per node '" + text + "': more than " + std::to_string(max_hosts) + " hosts");
    out.insert(out.end(), static_cast<size_t>(m), n);
  }
  return out;
}

expected<std::string> join_endpoint(const std::string& listen, const std::string& host) {
  const std::string scheme = "tcp://";
  if (listen.rfind(scheme, 0) != 0)
    return make_error("cluster.listen '" + listen +
                      "': nodes on other hosts dial TCP; expected tcp://HOST:PORT (e.g. tcp://*:5555)");
  auto colon = listen.rfind(':');
  std::string port = colon == std::string::npos || colon < scheme.size() ? "" : listen.substr(colon + 1);
  int64_t p = 0;
  if (!parse_count(port, p) || p < 1 || p > 65535)
    return make_error("cluster.listen '" + listen +
                      "': no fixed port, so only the head would know where it listens; name one (e.g. "
                      "tcp://*:5555)");
  if (host.empty()) return make_error("the head's host is not known (set cluster.join)");
  std::string h = host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
  return scheme + h + ":" + std::to_string(p);
}

device_choice choose_node_devices(const config& cfg, const environment& env, int64_t localid,
                                  int64_t tasks_on_host) {
  device_choice c;
  if (cfg.target != "cuda") return c;
  if (!cfg.cluster.node_devices.empty()) {
    c.devices = cfg.cluster.node_devices;
    c.from = "cluster.node_devices";
    return c;
  }
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) {
    std::string v = trim(it->second);
    c.from = "CUDA_VISIBLE_DEVICES=" + v;
    if (v.empty() || v == "NoDevFiles") return c;
    // CUDA numbers the visible devices 0..k-1 and ignores everything from the first invalid entry on.
    int64_t k = 0;
    for (const auto& entry : split_fields(v, ',')) {
      std::string e = trim(entry);
      if (e.empty() || e[0] == '-') break;
      c.devices.push_back(k++);
    }
    return c;
  }
  if (tasks_on_host > 1 && env.count("SLURM_LOCALID")) {
    c.devices = {localid};
    c.from = "SLURM_LOCALID=" + std::to_string(localid) + " (" + std::to_string(tasks_on_host) +
             " tasks share the host's GPUs)";
    return c;
  }
  c.devices = cfg.cuda.devices;
  c.from = "cuda.devices";
  return c;
}

expected<launch_info> resolve_launch(const config& cfg, const environment& env,
                                     const std::string& host_name) {
  launch_info li;
  li.host = host_name;
  const auto& cl = cfg.cluster;
  const std::string* procid = find_env(env, {"SLURM_PROCID"});
  if (!procid) {
    // Started by hand: a head. Nodes dial cluster.join, or this host at the listen port.
    if (!cl.join.empty()) {
      li.join = cl.join;
    } else if (!cl.listen.empty()) {
      std::string h = listen_host(cl.listen);
      if (auto j = join_endpoint(cl.listen, is_wildcard(h) ? host_name : h)) li.join = *j;
    }
    return li;
  }
  li.launcher = "slurm";
  if (!parse_count(*procid, li.procid))
    return make_error("SLURM_PROCID '" + *procid + "': expected a task number");
  const std::string* ntasks = find_env(env, {"SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_NPROCS"});
  if (!ntasks) return make_error("SLURM_PROCID is set but SLURM_NTASKS is not: start crucible with srun");
  if (!parse_count(*ntasks, li.ntasks) || li.ntasks < 1)
    return make_error("SLURM_NTASKS '" + *ntasks + "': expected a task count >= 1");
  if (li.procid >= li.ntasks)
    return make_error("SLURM_PROCID " + std::to_string(li.procid) + " is not below SLURM_NTASKS " +
                      std::to_string(li.ntasks));
  if (const std::string* local = find_env(env, {"SLURM_LOCALID"}); local && !parse_count(*local, li.localid))
    return make_error("SLURM_LOCALID '" + *local + "': expected a task number");
  if (const std::string* nodename = find_env(env, {"SLURMD_NODENAME"})) li.host = trim(*nodename);
  const char* list_var = "SLURM_STEP_NODELIST";
  const std::string* list = nullptr;
  for (const char* var : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})
    if ((list = find_env(env, {var}))) {
      list_var = var;
      break;
    }
  if (list) {
    auto hosts = expand_slurm_hostlist(*list);
    if (!hosts) return make_error(std::string(list_var) + ": " + hosts.message());
    li.hosts = std::move(*hosts);
  }
  if (const std::string* tpn = find_env(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    auto per_host = expand_slurm_tasks_per_node(*tpn);
    if (!per_host) return make_error("SLURM_TASKS_PER_NODE: " + per_host.message());
    int64_t total = 0;
    for (auto n : *per_host) total += n;
    // The job's figure where the step's differs (a step on part of the job): not this step's layout.
    if (total == li.ntasks && per_host->size() == li.hosts.size()) li.tasks_per_host = std::move(*per_host);
  }
  if (li.ntasks > 1 && cl.listen.empty())
    return make_error("Slurm started " + std::to_string(li.ntasks) +
                      " tasks but cluster.listen is empty, so each would train alone: set cluster.listen "
                      "(e.g. tcp://*:5555, as configs/cluster.yaml does) to make task 0 the head and the "
                      "others its nodes, or start one task (srun -n 1)");
  if (!cl.join.empty()) {
    li.join = cl.join;
  } else if (!cl.listen.empty()) {
    auto j =
        li.hosts.empty()
            ? expected<std::string>(make_error(
                  "SLURM_JOB_NODELIST is not set, so the nodes cannot tell where the head (task 0) runs: "
                  "set cluster.join to the head's endpoint"))
            : join_endpoint(cl.listen, li.hosts.front());
    if (j)
      li.join = *j;
    else if (li.ntasks > 1)
      return j.err();
  }
  auto here = place_task(li.procid, li.tasks_per_host, li.hosts.size(), li.ntasks);
  int64_t on_host = here.on_host;
  if (const std::string* per = find_env(env, {"SLURM_NTASKS_PER_NODE"}); per && li.tasks_per_host.empty()) {
    int64_t n = 0;
    if (parse_count(*per, n) && n > 0) on_host = n;
  }
  // The head's own figure too: the plan takes it as every node's (srun gives each the same request).
  li.devices = choose_node_devices(cfg, env, li.localid, on_host);
  if (li.procid == 0) return li;
  li.role = process_role::node;
  li.node_id = (li.host.empty() ? std::string("node") : li.host) + "-" + std::to_string(li.localid);
  auto bench = cl.node_roles.find("benchmarker");
  if (cfg.target == "cuda" && bench != cl.node_roles.end() && bench->second > 0 && li.devices.devices.empty())
    return make_error("this node (Slurm task " + std::to_string(li.procid) + " on " + li.host +
                      ") sees no GPU for its benchmarkers (" + li.devices.from +
                      "): ask Slurm for GPUs (--gpus-per-node) or set cluster.node_devices");
  return li;
}

placement_plan plan_placement(const config& cfg, const launch_info& launch) {
  placement_plan plan;
  const auto& cl = cfg.cluster;
  const bool slurm = launch.launcher == "slurm";
  plan.target = cfg.target;
  plan.launcher = launch.launcher;
  plan.self = slurm ? launch.procid : -1;
  plan.listen = cl.listen;
  plan.join = launch.join;
  plan.curve = !cl.secret_key.empty();
  plan.plaintext_remote = cl.plaintext_remote;
  plan.pipeline = cfg.pipeline;
  auto& w = plan.warnings;

  plan.head.role = process_role::head;
  plan.head.procid = slurm ? 0 : -1;
  if (slurm && !launch.hosts.empty()) plan.head.host = launch.hosts.front();
  plan.head.actors = head_actors(cfg);

  int64_t nodes = slurm ? launch.ntasks - 1 : cl.nodes;
  if (slurm && cl.nodes != nodes)
    plan.notes.push_back("Slurm started " + std::to_string(launch.ntasks) + " task(s): 1 head + " +
                         std::to_string(nodes) + " node(s) (cluster.nodes, " + std::to_string(cl.nodes) +
                         ", applies to launches by hand)");
  if (cl.listen.empty() && nodes > 0) {
    w.push_back("cluster.nodes is " + std::to_string(nodes) +
                " but cluster.listen is empty: the head opens no endpoint, so no node can join (set "
                "cluster.listen, e.g. tcp://*:5555)");
    nodes = 0;
  }
  bool node_has_role = false;
  for (const auto& [role, n] : cl.node_roles) node_has_role = node_has_role || (n > 0 && !is_head_role(role));
  environment no_env;
  for (int64_t k = 1; k <= nodes; ++k) {
    planned_process p;
    p.role = process_role::node;
    device_choice devices;
    if (slurm) {
      p.procid = k;
      auto at = place_task(k, launch.tasks_per_host, launch.hosts.size(), launch.ntasks);
      if (at.host < launch.hosts.size()) p.host = launch.hosts[at.host];
      p.node_id = (p.host.empty() ? std::string("node") : p.host) + "-" + std::to_string(at.localid);
      // What this process's environment says, taken as alike on every node (srun gives each the same).
      if (launch.role == process_role::node && k == launch.procid) {
        devices = launch.devices;
      } else {
        environment env;
        const std::string visible = "CUDA_VISIBLE_DEVICES=";
        if (launch.devices.from.rfind(visible, 0) == 0)
          env["CUDA_VISIBLE_DEVICES"] = launch.devices.from.substr(visible.size());
        if (at.on_host > 1) env["SLURM_LOCALID"] = std::to_string(at.localid);
        devices = choose_node_devices(cfg, env, at.localid, at.on_host);
      }
    } else {
      devices = choose_node_devices(cfg, no_env, 0, 1);
    }
    p.devices_from = devices.from;
    for (const auto& [role, n] : cl.node_roles)
      if (n > 0 && !is_head_role(role)) p.actors.push_back(place(cfg, role, n, devices.devices));
    plan.nodes.push_back(std::move(p));
  }

  // Every stage needs someone to serve it.
  for (const auto& stage : cfg.pipeline) {
    std::string role = role_of_stage(stage);
    int64_t at_head = count_of(plan.head.actors, role), at_nodes = 0;
    for (const auto& p : plan.nodes) at_nodes += count_of(p.actors, role);
    if (at_head + at_nodes > 0) continue;
    std::string what = "pipeline stage '" + stage + "' has no " + role + ": roles." + role + " is 0";
    if (cl.listen.empty())
      w.push_back(what + " and there is no cluster (cluster.listen is empty): the run cannot start");
    else if (nodes == 0)
      w.push_back(what + " and no node is planned (cluster.nodes: 0): candidates wait until a node that " +
                  "serves it joins (crucible node --join ... --roles " + role + ")");
    else
      w.push_back(what + " and cluster.node_roles has no " + role +
                  ": no process serves the stage, every candidate would wait for it");
  }
  if (nodes > 0) {
    if (!node_has_role)
      w.push_back(
          "cluster.node_roles gives no role a count: every node would refuse to start (a node "
          "needs at least one pipeline role)");
    std::set<std::string> stage_roles;
    for (const auto& s : cfg.pipeline) stage_roles.insert(role_of_stage(s));
    for (const auto& [role, n] : cl.node_roles) {
      if (n <= 0) continue;
      if (!stage_roles.count(role))
        w.push_back("cluster.node_roles." + role + ": no pipeline stage uses role '" + role +
                    "', so nodes offer it and the head never sends it work");
    }
  }

  // CURVE: both sides need their keys, and the files must exist.
  const bool head_side = !cl.listen.empty();
  if (cl.secret_key.empty()) {
    if (!cl.server_key.empty() || !cl.authorized_keys.empty())
      w.push_back(
          "CURVE is off because cluster.secret_key is empty, so cluster.server_key and "
          "cluster.authorized_keys are ignored: set cluster.secret_key to turn it on");
  } else {
    if (head_side && cl.authorized_keys.empty())
      w.push_back(
          "CURVE: cluster.secret_key is set but cluster.authorized_keys is not: the head refuses to "
          "start (no node could join); list the nodes' public keys there");
    if (nodes > 0 && cl.server_key.empty())
      w.push_back(
          "CURVE: cluster.secret_key is set but cluster.server_key (the head's public key) is not: "
          "nodes refuse to start");
    for (const auto& [key, path] : {std::pair<std::string, std::string>{"cluster.secret_key", cl.secret_key},
                                    {"cluster.server_key", cl.server_key},
                                    {"cluster.authorized_keys", cl.authorized_keys}}) {
      std::error_code ec;
      if (!path.empty() && !std::filesystem::exists(path, ec))
        w.push_back("CURVE: " + key + " '" + path + "' does not exist on this machine (make a pair with " +
                    "crucible keygen --secret FILE --public FILE.pub)");
    }
  }

  // Can the nodes reach the head?
  if (head_side && slurm) {
    std::string h = listen_host(cl.listen);
    std::set<std::string> distinct(launch.hosts.begin(), launch.hosts.end());
    if (is_loopback(h) && distinct.size() > 1)
      w.push_back("cluster.listen '" + cl.listen + "' binds loopback: nodes on the other " +
                  std::to_string(distinct.size() - 1) + " host(s) cannot reach it (listen on tcp://*:PORT)");
    else if (!h.empty() && !is_wildcard(h) && cl.join.empty() && !launch.hosts.empty() &&
             h != launch.hosts.front())
      w.push_back("cluster.listen binds '" + h + "' only but nodes dial '" + launch.hosts.front() +
                  "' (the first host): make sure that name resolves to that address, or set cluster.join");
  }

  // One benchmarker per GPU.
  if (cfg.target == "cuda") {
    for (const auto& a : plan.head.actors)
      if (a.role == "benchmarker") warn_shared_gpus(w, "head", a, "roles.benchmarker or cuda.devices");
    for (const auto& p : plan.nodes)
      for (const auto& a : p.actors)
        if (a.role == "benchmarker") warn_shared_gpus(w, "nodes", a, "cluster.node_roles.benchmarker");
  }
  return plan;
}

std::string format_placement(const placement_plan& plan) {
  std::ostringstream out;
  const bool slurm = plan.launcher == "slurm";
  out << "placement plan: target " << plan.target << ", 1 head + " << plan.nodes.size() << " node"
      << (plan.nodes.size() == 1 ? "" : "s");
  if (slurm)
    out << " (Slurm; this process is task " << plan.self << ", "
        << (plan.self == 0 ? "the head" : "node " + std::to_string(plan.self)) << ")";
  out << "\n";
  if (plan.listen.empty()) {
    out << "endpoint: none (one process: every actor runs in the head)\n";
  } else {
    out << "endpoint: the head listens on " << plan.listen << "; nodes join "
        << (plan.join.empty() ? "the endpoint the head writes to <run.dir>/cluster_endpoint" : plan.join)
        << "\n";
    out << "CURVE: "
        << (plan.curve ? "on (nodes and control clients need keys the head admits)"
            : plan.plaintext_remote
                ? "off, and cluster.plaintext_remote: any peer that reaches the endpoint "
                  "can join (scale only from the head's host)"
                : "off, so the head listens on loopback only: nodes of other hosts cannot "
                  "join (configs/cluster.yaml says how to turn CURVE on)")
        << "\n";
  }
  auto process_lines = [&](const planned_process& p) {
    for (const auto& a : p.actors) {
      std::string where = "cpu";
      if (!a.devices.empty()) {
        where.clear();
        for (auto d : a.devices) where += (where.empty() ? "cuda:" : ", cuda:") + std::to_string(d);
      }
      char line[160];
      std::snprintf(line, sizeof line, "  %-15s x%-3lld %s\n", a.role.c_str(),
                    static_cast<long long>(a.count), where.c_str());
      out << line;
    }
    if (p.actors.empty()) out << "  (no actors)\n";
  };
  out << "head";
  if (slurm)
    out << " (task 0" << (plan.head.host.empty() ? "" : " on " + plan.head.host) << ")";
  else
    out << " (crucible train)";
  out << ":\n";
  process_lines(plan.head);
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const auto& p = plan.nodes[i];
    out << "node " << i + 1 << " (";
    if (p.procid >= 0)
      out << "task " << p.procid << (p.host.empty() ? "" : " on " + p.host) << ", node id " << p.node_id;
    else
      out << "crucible node --join " << (plan.join.empty() ? "tcp://HEAD:PORT" : plan.join);
    if (!p.devices_from.empty()) out << "; GPUs from " << p.devices_from;
    out << "):\n";
    process_lines(p);
  }
  out << "pipeline:\n";
  for (const auto& stage : plan.pipeline) {
    std::string role = role_of_stage(stage);
    int64_t at_nodes = 0;
    for (const auto& p : plan.nodes) at_nodes += count_of(p.actors, role);
    char line[200];
    std::snprintf(line, sizeof line, "  %-10s %-13s head x%lld, nodes x%lld\n", stage.c_str(), role.c_str(),
                  static_cast<long long>(count_of(plan.head.actors, role)), static_cast<long long>(at_nodes));
    out << line;
  }
  for (const auto& n : plan.notes) out << "note: " << n << "\n";
  if (plan.warnings.empty()) {
    out << "warnings: none\n";
  } else {
    out << "warnings:\n";
    for (const auto& w : plan.warnings) out << "  - " << w << "\n";
  }
  return out.str();
}

head_absence::head_absence(clock::duration startup_grace, clock::duration gone_grace, clock::time_point start)
    : startup_grace_(startup_grace), gone_grace_(gone_grace), start_(start), last_answer_(start) {}

head_absence head_absence::for_config(const config& cfg, clock::time_point start) {
  auto gone = std::chrono::milliseconds(10 * cfg.cluster.liveness * cfg.cluster.heartbeat_ms);
  return head_absence(std::chrono::minutes(10), std::max<clock::duration>(gone, std::chrono::seconds(10)),
                      start);
}

void head_absence::answered(clock::time_point now) {
  answered_ = true;
  last_answer_ = now;
}

bool head_absence::should_leave(clock::time_point now) const {
  return answered_ ? now - last_answer_ > gone_grace_ : now - start_ > startup_grace_;
}

}  // namespace crucible::runtime
