#include "runtime/hosting/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/hosting/plugin_api.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

using abi_fn = const plugin_abi* (*)();
using register_fn = int (*)(plugin_host*);

// Every library ever loaded stays loaded: actors spawned from a plugin run its code until the process ends.
// The handles are kept (never dlclose'd) so that stays true and leak checkers see them owned.
void keep_loaded(void* handle) {
  static std::mutex mu;
  static auto* handles = new std::vector<void*>();
  std::lock_guard<std::mutex> lock(mu);
  handles->push_back(handle);
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

bool valid_role_name(const std::string& role) {
  if (role.empty() || role.size() > 64) return false;
  return std::all_of(role.begin(), role.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           ch == '-';
  });
}

// What a stage may not change: the candidate's identity and bytes (the ledger, the replay store and the
// content-hash cache rely on them). Empty when nothing of it changed.
std::string identity_change(const candidate& before, const candidate& after) {
  std::vector<std::string> changed;
  if (after.id != before.id) changed.push_back("id");
  if (after.group_id != before.group_id) changed.push_back("group_id");
  if (after.task != before.task) changed.push_back("task");
  if (after.content_hash != before.content_hash) changed.push_back("content_hash");
  if (after.source != before.source) changed.push_back("source");
  if (changed.empty()) return {};
  return "the stage changed the candidate's " + join(changed, ", ") +
         "; a stage may amend the verdict, never the candidate (runtime/hosting/plugin_api.hpp)";
}

caf::error stage_error(const plugin_context& ctx, const std::string& what) {
  return caf::make_error(caf::sec::runtime_error,
                         "plugin stage " + ctx.role + " #" + std::to_string(ctx.index) + ": " + what);
}

// The actor add_stage spawns per instance: (stage_atom, stage_request) -> scored_candidate through the
// plugin's function. An exception or an answer that rewrites the candidate is a failed stage, which the
// conductor re-dispatches and, after dispatch.max_attempts, scores as an error with the reason as evidence.
caf::behavior plugin_stage(caf::event_based_actor* self, std::shared_ptr<const stage_function> fn,
                           plugin_context ctx) {
  return {
      [=](stage_atom, const stage_request& req) -> caf::result<scored_candidate> {
        const scored_candidate& in = req.scored;
        scored_candidate out;
        try {
          out = (*fn)(in, ctx);
        } catch (const std::exception& e) {
          return stage_error(ctx, std::string("the stage function threw: ") + e.what());
        } catch (...) {
          return stage_error(ctx, "the stage function threw an exception that is not a std::exception");
        }
        if (auto why = identity_change(in.cand, out.cand); !why.empty()) return stage_error(ctx, why);
        return out;
      },
  };
}

// What a plugin role's instance sees: the host's role context reduced to the stable plugin view.
plugin_context plugin_view(const role_context& ctx) {
  auto info = std::make_shared<plugin_run_info>();
  if (const auto& run = ctx.run) {
    info->run_dir = run->dir;
    info->target = run->cfg.target;
    info->seed = run->cfg.run.seed;
    for (const auto& t : run->tasks) info->tasks.push_back(t.name);
    if (auto penalty = config_number(run->cfg, "verifier.penalty")) info->penalty = *penalty;
    if (auto it = run->cfg.plugin_settings.find(ctx.role); it != run->cfg.plugin_settings.end())
      info->settings = it->second;
  }
  return plugin_context{ctx.role, ctx.index, std::move(info), ctx.supervisor};
}

// A factory of the plugin's, guarded so an exception from it never reaches the supervisor.
role_factory guarded(std::string role, std::string path, plugin_role_factory factory) {
  return [role, path, factory = std::move(factory)](caf::actor_system& sys, const role_context& ctx) {
    try {
      return factory(sys, plugin_view(ctx));
    } catch (const std::exception& e) {
      spdlog::error("plugin {}: the factory of role {} threw: {}", path, role, e.what());
    } catch (...) {
      spdlog::error("plugin {}: the factory of role {} threw an exception that is not a std::exception", path,
                    role);
    }
    return caf::actor{};
  };
}

class host_impl final : public plugin_host {
 public:
  host_impl(std::string path, role_registry& staged, const plugin_load_options& options)
      : path_(std::move(path)), staged_(staged), options_(options) {}

  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<std::string>& roles() const { return roles_; }
  const std::vector<std::string>& replaced() const { return replaced_; }

 private:
  bool do_add_role(const std::string& role, plugin_role_factory factory, role_options options) override {
    if (!factory) return refuse("add_role(\"" + role + "\"): the factory is empty");
    if (!admit(role, options.replace)) return false;
    staged_.add(role, guarded(role, path_, std::move(factory)));
    return true;
  }

  bool do_add_stage(const std::string& role, stage_function fn, stage_options options) override {
    if (!fn) return refuse("add_stage(\"" + role + "\"): the stage function is empty");
    if (options.replace && is_head_role(role))
      return refuse("add_stage cannot replace the head role '" + role +
                    "': it drives the run and serves no stage (actors/roles.hpp); replace it with add_role "
                    "and an actor that speaks its protocol");
    if (!admit(role, options.replace)) return false;
    auto shared = std::make_shared<const stage_function>(std::move(fn));
    bool blocking = options.blocking;
    staged_.add(role, [shared, blocking](caf::actor_system& sys, const role_context& ctx) {
      return blocking ? sys.spawn<caf::detached>(plugin_stage, shared, plugin_view(ctx))
                      : sys.spawn(plugin_stage, shared, plugin_view(ctx));
    });
    return true;
  }

  void do_fail(const std::string& message) override {
    errors_.push_back(message.empty() ? std::string("the plugin reported a failure without a message")
                                      : message);
  }

  const std::string& do_path() const override { return path_; }

  bool refuse(std::string why) {
    errors_.push_back(std::move(why));
    return false;
  }

  // Whether `role` may be registered now; records why not.
  bool admit(const std::string& role, bool replace) {
    if (!valid_role_name(role))
      return refuse("role name '" + role +
                    "' is invalid: use 1 to 64 letters, digits, '_' or '-' (it is also the stage's name in "
                    "pipeline: and its key in roles:)");
    if (is_builtin_stage(role))
      return refuse("role name '" + role + "' is a built-in stage, which is always served by " +
                    role_of_stage(role) +
                    "; name the role differently, or replace that role (replace = true)");
    if (std::find(roles_.begin(), roles_.end(), role) != roles_.end())
      return refuse("role '" + role + "' is registered twice by this plugin");
    if (staged_.find(role) != nullptr) {
      if (!replace)
        return refuse("role '" + role +
                      "' is already registered (a built-in role, or one an earlier plugin added); choose "
                      "another name, or pass replace = true to replace it on purpose");
      if (!options_.allow_replace)
        return refuse("role '" + role + "' is already registered and replacing roles is not allowed here");
      replaced_.push_back(role);
    }
    roles_.push_back(role);
    return true;
  }

  std::string path_;
  role_registry& staged_;
  plugin_load_options options_;
  std::vector<std::string> errors_;
  std::vector<std::string> roles_;
  std::vector<std::string> replaced_;
};

// Differences between the plugin's ABI record and ours; empty when compatible. Reads past `version` only
// when the versions agree (the layout of the rest belongs to the version).
std::string abi_mismatch(const plugin_abi& theirs) {
  constexpr plugin_abi ours = this_plugin_abi();
  if (theirs.version != ours.version)
    return "it was built for plugin ABI " + std::to_string(theirs.version) + ", this crucible has ABI " +
           std::to_string(ours.version) +
           "; rebuild it against this checkout's runtime/hosting/plugin_api.hpp";
  std::vector<std::string> diffs;
  auto field = [&](const char* name, auto a, auto b) {
    if (a != b)
      diffs.push_back(std::string(name) + " " + std::to_string(a) + " (crucible: " + std::to_string(b) + ")");
  };
  field("CAF version", theirs.caf_version, ours.caf_version);
  field("_GLIBCXX_USE_CXX11_ABI", theirs.cxx11_abi, ours.cxx11_abi);
  field("message schema", theirs.schema_version, ours.schema_version);
  field("sizeof(scored_candidate)", theirs.scored_candidate_size, ours.scored_candidate_size);
  field("sizeof(stage_request)", theirs.stage_request_size, ours.stage_request_size);
  field("sizeof(plugin_context)", theirs.plugin_context_size, ours.plugin_context_size);
  field("sizeof(plugin_run_info)", theirs.plugin_run_info_size, ours.plugin_run_info_size);
  if (diffs.empty()) return {};
  return "it was built against different headers or libraries: " + join(diffs, ", ") +
         "; rebuild it against this checkout, the same CAF and the same compiler settings";
}

std::string dlopen_hint(const std::string& text) {
  if (text.find("invalid ELF header") != std::string::npos ||
      text.find("file too short") != std::string::npos)
    return " (not a shared library: build the plugin with add_library(NAME MODULE ...) and name the .so)";
  if (text.find("undefined symbol") != std::string::npos)
    return " (the plugin uses a symbol the crucible executable does not export: a plugin may use only "
           "header-only Crucible code, CAF and the standard library; see docs/plugins.md)";
  if (text.find("wrong ELF class") != std::string::npos) return " (built for another architecture)";
  return "";
}

expected<loaded_plugin> load_one(size_t index, const std::string& given, role_registry& staged,
                                 const plugin_load_options& options, std::vector<void*>& seen) {
  std::string label = "plugins[" + std::to_string(index) + "] (" + given + ")";
  auto fail = [&](const std::string& why) { return make_error(label + ": " + why); };
  if (given.empty()) return fail("empty path; expected the path of a plugin shared library");
  std::error_code ec;
  fs::path abs = fs::absolute(given, ec);
  if (ec) return fail("cannot resolve the path: " + ec.message());
  abs = abs.lexically_normal();
  auto st = fs::status(abs, ec);
  if (!fs::exists(st))
    return fail("no such file (" + abs.string() + "); a relative path is taken from the working directory " +
                fs::current_path(ec).string() + ", so an absolute path is safer; build the plugin first");
  if (fs::is_directory(st)) return fail("is a directory; expected a plugin shared library (.so)");
  ::dlerror();
  void* handle = ::dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    std::string text = e ? e : "unknown dlopen error";
    return fail("cannot be loaded: " + text + dlopen_hint(text));
  }
  keep_loaded(handle);
  if (auto it = std::find(seen.begin(), seen.end(), handle); it != seen.end())
    return fail("is the same library as plugins[" + std::to_string(it - seen.begin()) +
                "]; list each plugin once");
  seen.push_back(handle);
  auto abi = reinterpret_cast<abi_fn>(::dlsym(handle, plugin_abi_symbol));
  auto reg = reinterpret_cast<register_fn>(::dlsym(handle, plugin_register_symbol));
  if (abi == nullptr && reg == nullptr)
    return fail(std::string("exports no Crucible entry point (") + plugin_abi_symbol + ", " +
                plugin_register_symbol +
                "): not a Crucible plugin, or its sources lack CRUCIBLE_PLUGIN(...) from "
                "runtime/hosting/plugin_api.hpp");
  if (abi == nullptr || reg == nullptr)
    return fail(std::string("exports ") + (abi ? plugin_abi_symbol : plugin_register_symbol) + " but not " +
                (abi ? plugin_register_symbol : plugin_abi_symbol) +
                "; define both with CRUCIBLE_PLUGIN(...) from runtime/hosting/plugin_api.hpp");
  const plugin_abi* theirs = abi();
  if (theirs == nullptr) return fail(std::string(plugin_abi_symbol) + "() returned null");
  if (auto why = abi_mismatch(*theirs); !why.empty()) return fail(why);

  role_registry attempt = staged;  // the plugin's roles count only if its whole registration succeeds
  host_impl host(abs.string(), attempt, options);
  int rc = reg(&host);
  if (rc != 0 || !host.errors().empty()) {
    std::string why = host.errors().empty()
                          ? std::string(plugin_register_symbol) + " returned " + std::to_string(rc)
                          : join(host.errors(), "; ");
    return fail("registration failed: " + why);
  }
  staged = std::move(attempt);
  loaded_plugin out;
  out.path = abs.string();
  out.roles = host.roles();
  out.replaced = host.replaced();
  return out;
}

}  // namespace

expected<std::vector<loaded_plugin>> load_plugins(const std::vector<std::string>& paths,
                                                  role_registry& registry,
                                                  const plugin_load_options& options) {
  role_registry staged = registry;
  std::vector<void*> seen;
  std::vector<loaded_plugin> out;
  for (size_t i = 0; i < paths.size(); ++i) {
    auto p = load_one(i, paths[i], staged, options, seen);
    if (!p) return p.err();
    out.push_back(std::move(*p));
  }
  registry = std::move(staged);
  return out;
}

void log_loaded_plugins(const std::vector<loaded_plugin>& loaded) {
  for (const auto& p : loaded) {
    if (p.roles.empty())
      spdlog::warn("plugin {}: registered no role", p.path);
    else
      spdlog::info("plugin {}: registered {}", p.path, join(p.roles, ", "));
    for (const auto& r : p.replaced) spdlog::warn("plugin {}: replaces the role {}", p.path, r);
  }
}

expected<std::vector<loaded_plugin>> load_configured_plugins(const config& cfg, role_registry& registry) {
  auto loaded = load_plugins(cfg.plugins, registry);
  if (loaded) log_loaded_plugins(*loaded);
  return loaded;
}

}  // namespace crucible::runtime
