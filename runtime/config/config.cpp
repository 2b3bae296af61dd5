#include "runtime/config/config.hpp"

#include "runtime/dashboard/http_server.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <variant>

#include <yaml-cpp/yaml.h>

#include "runtime/config/split_fields.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"
#include "runtime/pipeline/training_stages.hpp"

namespace crucible::runtime {
namespace {

// Keys whose subtree is one field (a mapping the field reads whole): the unknown-key check stops there.
bool is_open_section(const std::string& path) {
  return path == "roles" || path == "cluster.node_roles" || path == "plugin_settings";
}

// One plugin role's settings: nested mappings flattened to dotted keys, scalars and lists of scalars kept as
// their text.
status read_settings(const YAML::Node& n, const std::string& path, const std::string& key,
                     std::map<std::string, std::vector<std::string>>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      std::string k = kv.first.as<std::string>();
      if (auto st = read_settings(kv.second, path + "." + k, key.empty() ? k : key + "." + k, out); !st)
        return st;
    }
    return {};
  }
  std::vector<std::string> values;
  if (n.IsScalar()) {
    values.push_back(n.Scalar());
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar())
        return make_error(path + "[" + std::to_string(i) + "]: expected a scalar (a plugin setting is a " +
                          "scalar or a list of scalars)");
      values.push_back(n[i].Scalar());
    }
  } else if (!n.IsNull()) {
    return make_error(path + ": expected a scalar, a list of scalars or a mapping");
  }
  if (key.empty()) return make_error(path + ": expected a mapping of setting names to values");
  out[key] = std::move(values);
  return {};
}

// The runtime's own keys, once: its path and a reference to the field.
field_list core_fields_of(config& c) {
  return {
      {"target", &c.target},
      {"run.dir", &c.run.dir},
      {"run.max_steps", &c.run.max_steps},
      {"run.max_minutes", &c.run.max_minutes},
      {"run.seed", &c.run.seed},
      {"run.checkpoint_every", &c.run.checkpoint_every},
      {"run.log_level", &c.run.log_level},
      {"run.progress", &c.run.progress},
      {"run.shutdown_grace_s", &c.run.shutdown_grace_s},
      {"run.threads", &c.run.threads},
      {"run.max_role_count", &c.run.max_role_count},
      {"tasks.dir", &c.tasks.dir},
      {"tasks.kernelbench_dir", &c.tasks.kernelbench_dir},
      {"tasks.kernelbench_level", &c.tasks.kernelbench_level},
      {"tasks.include", &c.tasks.include},
      {"tasks.exclude", &c.tasks.exclude},
      {"roles", &c.roles},
      {"pipeline", &c.pipeline},
      {"stages", &c.stages},
      {"async.max_staleness", &c.async.max_staleness},
      {"async.groups_in_flight", &c.async.groups_in_flight},
      {"learner.group_size", &c.learner.group_size},
      {"learner.groups_per_step", &c.learner.groups_per_step},
      {"replay.exemplars", &c.replay.exemplars},
      {"replay.refine_turns", &c.replay.refine_turns},
      {"replay.temperature", &c.replay.temperature},
      {"replay.bucket_edges", &c.replay.bucket_edges},
      {"cuda.arch", &c.cuda.arch},
      {"cuda.nvcc", &c.cuda.nvcc},
      {"cuda.cudnn_dir", &c.cuda.cudnn_dir},
      {"cuda.devices", &c.cuda.devices},
      {"dispatch.max_attempts", &c.dispatch.max_attempts},
      {"dispatch.stage_timeout_s", &c.dispatch.stage_timeout_s},
      {"cluster.listen", &c.cluster.listen},
      {"cluster.join", &c.cluster.join},
      {"cluster.heartbeat_ms", &c.cluster.heartbeat_ms},
      {"cluster.liveness", &c.cluster.liveness},
      {"cluster.secret_key", &c.cluster.secret_key},
      {"cluster.server_key", &c.cluster.server_key},
      {"cluster.authorized_keys", &c.cluster.authorized_keys},
      {"cluster.plaintext_remote", &c.cluster.plaintext_remote},
      {"cluster.node_roles", &c.cluster.node_roles},
      {"cluster.node_devices", &c.cluster.node_devices},
      {"cluster.nodes", &c.cluster.nodes},
      {"dashboard.listen", &c.dashboard.listen},
      {"dashboard.controls", &c.dashboard.controls},
      {"dashboard.refresh_s", &c.dashboard.refresh_s},
      {"plugins", &c.plugins},
      {"plugin_settings", &c.plugin_settings},
  };
}

// Every key of the config, once: the core's, then each registered section's. Loading, dumping and the
// unknown-key check all walk this one list.
field_list fields_of(config& c) {
  field_list all = core_fields_of(c);
  for (const auto& schema : config_section_schemas()) {
    for (const auto& [key, ref] : all)
      if (key == schema.name || key.rfind(schema.name + ".", 0) == 0) {
        std::fprintf(stderr, "crucible: config section '%s' clashes with the runtime's key '%s'\n",
                     schema.name.c_str(), key.c_str());
        std::abort();
      }
    for (auto& [key, ref] : schema.fields(c.sections.slot(schema)))
      all.emplace_back(schema.name + "." + key, ref);
  }
  return all;
}

// Lookup without yaml-cpp's operator[] side effects on const nodes.
YAML::Node find_path(const YAML::Node& root, const std::string& path) {
  YAML::Node cur = YAML::Clone(root);
  for (const auto& part : split_fields(path, '.')) {
    if (!cur || !cur.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node next = cur[part];
    if (!next) return YAML::Node(YAML::NodeType::Undefined);
    cur = next;
  }
  return cur;
}

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

template <class T>
status read_scalar(const YAML::Node& n, const std::string& path, const char* what, T& out) {
  if (!n.IsScalar()) return make_error(path + ": expected " + what + ", got " + kind_of(n));
  try {
    out = n.as<T>();
  } catch (const std::exception&) {
    return make_error(path + ": expected " + what + ", got " + kind_of(n));
  }
  return {};
}

template <class E>
status read_list(const YAML::Node& n, const std::string& path, std::vector<E>* p, const char* what,
                 const char* each) {
  if (!n.IsSequence()) return make_error(path + ": expected " + what + ", got " + kind_of(n));
  p->clear();
  for (size_t i = 0; i < n.size(); ++i) {
    E v{};
    if (auto st = read_scalar(n[i], path + "[" + std::to_string(i) + "]", each, v); !st) return st;
    p->push_back(v);
  }
  return {};
}

status read_field(const YAML::Node& n, const std::string& path, field_ref ref) {
  struct visitor {
    const YAML::Node& n;
    const std::string& path;
    status operator()(std::string* p) { return read_scalar(n, path, "a string", *p); }
    status operator()(int64_t* p) { return read_scalar(n, path, "an integer", *p); }
    status operator()(int32_t* p) { return read_scalar(n, path, "an integer", *p); }
    status operator()(double* p) { return read_scalar(n, path, "a number", *p); }
    status operator()(bool* p) { return read_scalar(n, path, "true or false", *p); }
    status operator()(std::vector<std::string>* p) {
      if (!n.IsSequence()) return make_error(path + ": expected a list of strings, got " + kind_of(n));
      p->clear();
      for (size_t i = 0; i < n.size(); ++i) {
        std::string v;
        if (auto st = read_scalar(n[i], path + "[" + std::to_string(i) + "]", "a string", v); !st) return st;
        p->push_back(v);
      }
      return {};
    }
    status operator()(std::vector<double>* p) {
      return read_list(n, path, p, "a list of numbers", "a number");
    }
    status operator()(std::vector<int64_t>* p) {
      return read_list(n, path, p, "a list of integers", "an integer");
    }
    status operator()(std::map<std::string, int64_t>* p) {
      if (!n.IsMap())
        return make_error(path + ": expected a mapping of role name to count, got " + kind_of(n));
      // Listed roles replace the defaults one by one; a role set to 0 is switched off.
      for (const auto& kv : n) {
        std::string role = kv.first.as<std::string>();
        int64_t count = 0;
        if (auto st = read_scalar(kv.second, path + "." + role, "an integer count", count); !st) return st;
        (*p)[role] = count;
      }
      return {};
    }
    status operator()(settings_map* p) {
      if (!n.IsMap())
        return make_error(path + ": expected a mapping of plugin role to its settings, got " + kind_of(n));
      p->clear();
      for (const auto& kv : n) {
        std::string role = kv.first.as<std::string>();
        if (!kv.second.IsMap())
          return make_error(path + "." + role + ": expected a mapping of setting names to values, got " +
                            kind_of(kv.second));
        auto& into = (*p)[role];
        if (auto st = read_settings(kv.second, path + "." + role, "", into); !st) return st;
      }
      return {};
    }
  };
  return std::visit(visitor{n, path}, ref);
}

// The first key written twice in one mapping, as its path; empty when none. YAML parsers keep the first and
// drop the second silently, so a user's second value would be ignored without a word.
std::string duplicate_key(const YAML::Node& n, const std::string& prefix) {
  if (!n.IsMap()) return "";
  std::set<std::string> seen;
  for (const auto& kv : n) {
    std::string key = kv.first.Scalar();
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!seen.insert(key).second) return path;
    if (auto deeper = duplicate_key(kv.second, path); !deeper.empty()) return deeper;
  }
  return "";
}

void collect_leaves(const YAML::Node& n, const std::string& prefix, std::vector<std::string>& out) {
  if (n.IsMap() && !is_open_section(prefix)) {
    for (const auto& kv : n) {
      std::string key = kv.first.as<std::string>();
      collect_leaves(kv.second, prefix.empty() ? key : prefix + "." + key, out);
    }
  } else {
    out.push_back(prefix);
  }
}

status apply_override(YAML::Node& root, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return make_error("--set '" + assignment + "': expected key.path=value (e.g. grpo.lr=5e-4)");
  std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const std::exception& e) {
    return make_error("--set " + path + ": value is not valid YAML: " + e.what());
  }
  if (!value || value.IsNull()) value = YAML::Node(std::string());
  auto parts = split_fields(path, '.');
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (cur[parts[i]] && !cur[parts[i]].IsMap())
      return make_error("--set " + path + ": '" + parts[i] + "' is not a section");
    if (!cur[parts[i]]) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    cur.reset(cur[parts[i]]);
  }
  cur[parts.back()] = value;
  return {};
}

status validate(const config& c) {
  auto need = [](bool ok, const std::string& msg) -> status { return ok ? status{} : make_error(msg); };
  status checks[] = {
      need(c.target == "cpu" || c.target == "cuda", "target: expected cpu or cuda, got '" + c.target + "'"),
      need(c.run.max_steps >= 1, "run.max_steps: expected >= 1"),
      need(c.run.max_minutes > 0, "run.max_minutes: expected > 0"),
      need(c.run.checkpoint_every >= 1, "run.checkpoint_every: expected >= 1"),
      need(c.run.threads >= 0, "run.threads: expected >= 0"),
      need(c.run.max_role_count >= 1, "run.max_role_count: expected >= 1"),
      need(std::set<std::string>{"trace", "debug", "info", "warn", "error"}.count(c.run.log_level) == 1,
           "run.log_level: expected trace, debug, info, warn or error"),
      need(c.async.max_staleness >= 0, "async.max_staleness: expected >= 0"),
      need(c.async.groups_in_flight >= 1, "async.groups_in_flight: expected >= 1"),
      need(c.learner.group_size >= 2, "learner.group_size: expected >= 2 (GRPO compares within a group)"),
      need(c.learner.groups_per_step >= 1, "learner.groups_per_step: expected >= 1"),
      need(c.replay.exemplars >= 0, "replay.exemplars: expected >= 0"),
      need(c.replay.refine_turns >= 0 && c.replay.refine_turns <= 8, "replay.refine_turns: expected 0 to 8"),
      need(c.replay.temperature > 0, "replay.temperature: expected > 0"),
      need(c.dispatch.max_attempts >= 1, "dispatch.max_attempts: expected >= 1"),
      need(c.dispatch.stage_timeout_s > 0, "dispatch.stage_timeout_s: expected > 0"),
      need(!c.pipeline.empty(), "pipeline: expected at least one stage"),
      need(c.target != "cuda" || !c.cuda.devices.empty(), "cuda.devices: expected at least one device"),
      need(c.cuda.arch.rfind("sm_", 0) == 0,
           "cuda.arch: expected sm_<NN> (e.g. sm_90), got '" + c.cuda.arch + "'"),
  };
  for (auto d : c.cuda.devices)
    if (d < 0) return make_error("cuda.devices: expected device indices >= 0");
  for (auto& st : checks)
    if (!st) return st;
  for (size_t i = 1; i < c.replay.bucket_edges.size(); ++i)
    if (!(c.replay.bucket_edges[i - 1] < c.replay.bucket_edges[i]))
      return make_error("replay.bucket_edges: expected strictly increasing numbers");
  for (const auto& [role, n] : c.roles) {
    if (n < 0) return make_error("roles." + role + ": expected a count >= 0");
    if (n > c.run.max_role_count)
      return make_error("roles." + role + ": " + std::to_string(n) + " is above run.max_role_count (" +
                        std::to_string(c.run.max_role_count) + ")");
  }
  for (const auto& [role, n] : c.cluster.node_roles) {
    if (n < 0) return make_error("cluster.node_roles." + role + ": expected a count >= 0");
    if (auto no = node_refusal(role); n > 0 && !no.empty())
      return make_error("cluster.node_roles." + role + ": " + role + no + " (give the head roles." + role +
                        " instead)");
    if (n > c.run.max_role_count)
      return make_error("cluster.node_roles." + role + ": " + std::to_string(n) +
                        " is above run.max_role_count (" + std::to_string(c.run.max_role_count) + ")");
  }
  if (c.cluster.heartbeat_ms < 10) return make_error("cluster.heartbeat_ms: expected >= 10");
  if (c.cluster.liveness < 2) return make_error("cluster.liveness: expected >= 2");
  if (c.cluster.nodes < 0) return make_error("cluster.nodes: expected >= 0");
  for (auto d : c.cluster.node_devices)
    if (d < 0) return make_error("cluster.node_devices: expected device indices >= 0");
  if (c.dashboard.listen != "off" && !c.dashboard.listen.empty())
    if (auto where = parse_listen(c.dashboard.listen); !where)
      return make_error("dashboard.listen: " + where.message() + " (or off)");
  if (c.dashboard.controls != "auto" && c.dashboard.controls != "on" && c.dashboard.controls != "off")
    return make_error("dashboard.controls: expected auto, on or off, got '" + c.dashboard.controls + "'");
  if (!(c.dashboard.refresh_s >= 0.1 && c.dashboard.refresh_s <= 60))
    return make_error("dashboard.refresh_s: expected seconds from 0.1 to 60");
  for (const auto& p : c.plugins)
    if (p.empty()) return make_error("plugins: expected paths of shared libraries, got an empty one");
  return {};
}

}  // namespace

expected<config> parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                              const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return make_error(origin + ": not valid YAML: " + e.what());
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) return make_error(origin + ": expected a mapping at the top level");
  if (auto dup = duplicate_key(root, ""); !dup.empty())
    return make_error(origin + ": key '" + dup + "' is written twice (the second would be ignored)");
  for (const auto& o : overrides)
    if (auto st = apply_override(root, o); !st) return st.err();

  config c;
  auto fields = fields_of(c);
  std::set<std::string> known;
  for (const auto& [path, ref] : fields) known.insert(path);
  std::vector<std::string> leaves;
  collect_leaves(root, "", leaves);
  for (const auto& leaf : leaves) {
    if (known.count(leaf)) continue;
    // A section given as a scalar, or a key that exists nowhere.
    std::string hint;
    for (const auto& k : known)
      if (k.rfind(leaf + ".", 0) == 0) hint = " ('" + leaf + "' is a section)";
    return make_error(origin + ": unknown key '" + leaf + "'" + hint);
  }
  for (const auto& [path, ref] : fields) {
    YAML::Node n = find_path(root, path);
    if (!n.IsDefined()) continue;
    if (auto st = read_field(n, path, ref); !st) return make_error(origin + ": " + st.message());
  }
  // The judge stage needs a judge: one by default, unless the file says how many (0: nodes serve it).
  if (std::find(c.pipeline.begin(), c.pipeline.end(), "judge") != c.pipeline.end() &&
      !c.roles.count("judge") && !find_path(root, "roles.judge").IsDefined())
    c.roles["judge"] = 1;
  if (auto st = validate(c); !st) return make_error(origin + ": " + st.message());
  if (auto st = parse_stage_list(c.stages); !st) return make_error(origin + ": " + st.message());
  for (const auto& schema : config_section_schemas())
    if (schema.validate)
      if (auto st = schema.validate(c.sections.slot(schema), c); !st)
        return make_error(origin + ": " + st.message());
  // Defaults that follow from other keys (the CUDA target's compiler), for the keys the file left out.
  key_is_set is_set = [&root](const std::string& path) { return find_path(root, path).IsDefined(); };
  for (const auto& schema : config_section_schemas())
    if (schema.resolve) schema.resolve(c.sections.slot(schema), c, is_set);
  return c;
}

expected<config> load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  // A file with nothing in it (or only comments) is a mistake, not a request for every default.
  try {
    if (YAML::Node n = YAML::Load(ss.str()); !n || n.IsNull())
      return make_error(path +
                        ": the config file is empty (no key is set); leave out --config for the defaults");
  } catch (const YAML::Exception&) {
    // parse_config says what is wrong with it
  }
  return parse_config(ss.str(), overrides, path);
}

expected<double> config_number(const config& c_in, const std::string& path) {
  config c = c_in;
  for (const auto& [key, ref] : fields_of(c)) {
    if (key != path) continue;
    if (auto* d = std::get_if<double*>(&ref)) return **d;
    if (auto* i = std::get_if<int64_t*>(&ref)) return static_cast<double>(**i);
    if (auto* i = std::get_if<int32_t*>(&ref)) return static_cast<double>(**i);
    return make_error(path + ": not a number key");
  }
  return make_error(path + ": no such key");
}

std::string to_yaml(const config& c_in) {
  config c = c_in;
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& [path, ref] : fields_of(c)) {
    auto parts = split_fields(path, '.');
    YAML::Node cur = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!cur[parts[i]]) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      cur.reset(cur[parts[i]]);
    }
    std::visit(
        [&](auto* p) {
          using T = std::decay_t<decltype(*p)>;
          if constexpr (std::is_same_v<T, std::map<std::string, int64_t>>) {
            YAML::Node m(YAML::NodeType::Map);
            for (const auto& [k, v] : *p) m[k] = v;
            cur[parts.back()] = m;
          } else if constexpr (std::is_same_v<T, settings_map>) {
            YAML::Node m(YAML::NodeType::Map);
            for (const auto& [role, settings] : *p) {
              YAML::Node r(YAML::NodeType::Map);
              for (const auto& [k, values] : settings) {
                if (values.size() == 1) {
                  r[k] = values.front();
                } else {
                  YAML::Node s(YAML::NodeType::Sequence);
                  for (const auto& v : values) s.push_back(v);
                  s.SetStyle(YAML::EmitterStyle::Flow);
                  r[k] = s;
                }
              }
              m[role] = r;
            }
            cur[parts.back()] = m;
          } else if constexpr (std::is_same_v<T, std::vector<std::string>> ||
                               std::is_same_v<T, std::vector<double>> ||
                               std::is_same_v<T, std::vector<int64_t>>) {
            YAML::Node s(YAML::NodeType::Sequence);
            for (const auto& v : *p) s.push_back(v);
            s.SetStyle(YAML::EmitterStyle::Flow);
            cur[parts.back()] = s;
          } else {
            cur[parts.back()] = *p;
          }
        },
        ref);
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace crucible::runtime
