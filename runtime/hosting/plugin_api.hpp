#pragma once
// The public header of a Crucible plugin (docs/plugins.md; examples/plugin_stage is a complete one).
//
// A plugin is a shared library named in config (`plugins: [path/to/lib.so]`). `crucible train` and
// `crucible node` load it after the built-in roles are registered and before any actor starts; it adds roles
// to the same role registry the built-in actors use, so a plugin role is spawned, pooled, supervised,
// restarted and dispatched to exactly like a built-in one. A role named S serves the custom pipeline stage S
// (`pipeline: [compile, benchmark, verify, S]`, `roles: {S: 1}`).
//
// Writing one:
//
//   #include "runtime/hosting/plugin_api.hpp"
//   namespace cr = crucible::runtime;
//   crucible::scored_candidate audit(crucible::scored_candidate c, const cr::role_context& ctx) {
//     c.judged.evidence.push_back("audit: seen");
//     return c;
//   }
//   void register_roles(cr::plugin_host& host) { host.add_stage("audit", audit); }
//   CRUCIBLE_PLUGIN(register_roles)
//
// Contract (what a plugin may and may not do):
// * Build it against the same Crucible source tree, CAF (0.17, shared libcaf_core) and C++ standard
//   library as the crucible executable. The ABI record below is checked at load time; a mismatch is a load
//   error naming what differs, never a crash later.
// * Use the header-only parts of Crucible (the message structs of messages/ and this header), CAF and the
//   standard library. A plugin sees its run through plugin_run_info (run directory, target, seed, tasks,
//   penalty, and its own settings: the config's plugin_settings.<role>), never through the host's config,
//   so a key added to Crucible's config changes nothing a plugin was built against. Do not call Crucible
//   functions that are defined in its .cpp files: they live in the executable's static libraries, are not
//   exported, and dlopen reports them as undefined symbols. (A plugin that spawns its own CAF actors
//   exchanging Crucible messages needs their encoding from messages/*.cpp: it links crucible_messages, its
//   own copy.)
// * Exceptions must not cross the plugin boundary. CRUCIBLE_PLUGIN catches what registration throws and
//   reports it as a load error; the host catches what a stage function or a role factory throws and turns it
//   into a failed stage (re-dispatched, then scored as an error) or a role that could not start. Actors a
//   plugin spawns itself (add_role) must not let exceptions escape their handlers: CAF kills the actor and
//   the supervisor restarts it, and a role that keeps dying is stopped.
// * Threading: registration runs once per load, on the loading thread, before the actor system starts.
//   A stage function is called by the actors of its role: one call at a time per actor, but `roles: {S: N}`
//   with N > 1 runs N actors, so calls may be concurrent; a stage function must be safe for that (keep
//   state per call, or behind a lock). Stage functions run on CAF's scheduler threads: one that blocks
//   (subprocesses, files, long computation) sets stage_options::blocking so its actors get their own threads.
// * A stage reads the candidate scored so far and returns it, possibly amended: it may change the verdict
//   (`judged`: outcome, flags, evidence, speedup, reward — the reward the learner sees is judged.reward),
//   add bench notes, but not the candidate itself (`cand`: id, group, task, source, content hash); the host
//   refuses an answer that changes them.
// * The library stays loaded for the life of the process (actors' code lives in it); it is never unloaded.
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/config.hpp>
#include <caf/fwd.hpp>

#include "messages/envelope.hpp"
#include "messages/scored.hpp"
#include "messages/stage_request.hpp"

namespace crucible::runtime {

/// Bumped whenever plugin_host, plugin_abi, the entry points or the stage contract change incompatibly.
/// 2: every stage answers (stage_atom, stage_request) -> scored_candidate; the per-stage atoms are gone.
/// 3: plugins see plugin_context and plugin_run_info, not the host's role_context and run_context.
inline constexpr int32_t plugin_abi_version = 3;

/// The names of the two extern "C" functions a plugin exports (CRUCIBLE_PLUGIN defines both).
inline constexpr const char* plugin_abi_symbol = "crucible_plugin_abi";
inline constexpr const char* plugin_register_symbol = "crucible_plugin_register";

/// What a plugin was built against. The loader compares every field with its own before calling into the
/// plugin: a different C++ library ABI, CAF version, message schema or struct layout would otherwise be
/// memory corruption at the first message. Layout sizes catch a plugin built against an older checkout.
/// Standard layout, only fixed-size fields; `version` stays the first field in every ABI version.
struct plugin_abi {
  int32_t version;
  int32_t caf_version;
  int32_t cxx11_abi;  ///< libstdc++'s _GLIBCXX_USE_CXX11_ABI (std::string layout)
  int32_t schema_version;
  uint32_t scored_candidate_size;
  uint32_t stage_request_size;
  uint32_t plugin_context_size;
  uint32_t plugin_run_info_size;
};

/// What a plugin sees of the run it serves. Part of the plugin ABI: it changes only with plugin_abi_version,
/// whatever else of Crucible's config grows.
struct plugin_run_info {
  std::string run_dir;             ///< absolute run directory (a plugin's own files go under it)
  std::string target;              ///< cpu | cuda
  int64_t seed = 0;                ///< run.seed
  std::vector<std::string> tasks;  ///< the names of the tasks the run trains on, sorted
  double penalty = -1.0;           ///< the reward of a convicted candidate (verifier.penalty)
  /// The plugin role's own settings, the config's plugin_settings.<role> subtree: dotted keys
  /// ("limits.lines") to their values as written, a scalar as one element, a list as its elements.
  std::map<std::string, std::vector<std::string>> settings;
};

/// Which instance of which plugin role is at work, and the run it serves.
struct plugin_context {
  std::string role;
  int index = 0;
  std::shared_ptr<const plugin_run_info> run;  ///< never null in the host
  /// The run's supervisor: (pool_atom, role) -> vector<actor>, for a role that talks to other roles.
  caf::actor supervisor;

  /// The setting `key` of this role (its first value), or `fallback` when not set.
  std::string setting(const std::string& key, const std::string& fallback = {}) const {
    if (!run) return fallback;
    auto it = run->settings.find(key);
    return it == run->settings.end() || it->second.empty() ? fallback : it->second.front();
  }
  /// Every value of the setting `key` (a list), or `fallback` when not set.
  std::vector<std::string> setting_list(const std::string& key,
                                        std::vector<std::string> fallback = {}) const {
    if (!run) return fallback;
    auto it = run->settings.find(key);
    return it == run->settings.end() ? fallback : it->second;
  }
};

/// The ABI of whoever compiles this header: the plugin's record in a plugin, the expectation in the host.
constexpr plugin_abi this_plugin_abi() {
  return plugin_abi{plugin_abi_version,
                    CAF_VERSION,
#ifdef _GLIBCXX_USE_CXX11_ABI
                    _GLIBCXX_USE_CXX11_ABI,
#else
                    -1,
#endif
                    static_cast<int32_t>(crucible::schema_version),
                    static_cast<uint32_t>(sizeof(scored_candidate)),
                    static_cast<uint32_t>(sizeof(stage_request)),
                    static_cast<uint32_t>(sizeof(plugin_context)),
                    static_cast<uint32_t>(sizeof(plugin_run_info))};
}

/// A pipeline stage as a plain function: the candidate as scored so far in, the amended candidate out.
/// `ctx` says which instance of the role is calling and which run (ctx.run, ctx.setting(key)).
/// See the contract above for what may change and for threading.
using stage_function = std::function<scored_candidate(scored_candidate, const plugin_context& ctx)>;

/// Spawns one instance of a plugin role; a null actor means "could not start".
using plugin_role_factory = std::function<caf::actor(caf::actor_system&, const plugin_context& ctx)>;

struct role_options {
  /// Replace a role that is already registered (a built-in such as `verifier`, or an earlier plugin's).
  /// Without it such a clash is a load error, so a plugin never shadows a built-in by accident.
  bool replace = false;
};

struct stage_options {
  /// Spawn the stage's actors detached (a thread each) because the function blocks: subprocesses, I/O, or
  /// computation longer than a few milliseconds. Cheap functions leave it false and share CAF's scheduler.
  bool blocking = false;
  /// As role_options::replace: a stage role (a built-in compiler, benchmarker, verifier or judge, or an
  /// earlier plugin's). A head role (conductor, generator, replay_buffer, learner) is not a stage: replace it
  /// with add_role.
  bool replace = false;
};

/// What the host hands a plugin's registration function. Owned by the host and valid only during the
/// registration call; every method is called on the loading thread. Adding a role whose name is taken,
/// empty, not [A-Za-z0-9_-], or the name of a built-in stage (compile, benchmark, verify: those stages are
/// served by compiler, benchmarker and verifier) fails the whole plugin load with a message saying so.
class plugin_host {
 public:
  /// A role served by actors the plugin spawns itself with CAF: the full power of a built-in role (any
  /// protocol; a stage answers (stage_atom, stage_request) -> scored_candidate). The factory is
  /// called once per instance, on the supervisor's thread; returning a null actor means "could not start".
  bool add_role(const std::string& role, plugin_role_factory factory, role_options options = {}) {
    return do_add_role(role, std::move(factory), options);
  }

  /// A custom pipeline stage from a plain function: the host spawns, per instance of `role`, an actor that
  /// answers (stage_atom, stage_request) -> scored_candidate by calling `fn` with the request's candidate,
  /// turning an exception into a failed stage. The plugin needs no CAF code of its own.
  bool add_stage(const std::string& role, stage_function fn, stage_options options = {}) {
    return do_add_stage(role, std::move(fn), options);
  }

  /// Fails the load with `message` (e.g. a setting the plugin needs is missing); nothing the plugin
  /// registered is kept, and the user sees "plugins[i] (path): registration failed: message".
  void fail(const std::string& message) { do_fail(message); }

  /// The absolute path this plugin was loaded from.
  const std::string& path() const { return do_path(); }

 protected:
  ~plugin_host() = default;  // the host owns it; a plugin never deletes it

 private:
  virtual bool do_add_role(const std::string& role, plugin_role_factory factory, role_options options) = 0;
  virtual bool do_add_stage(const std::string& role, stage_function fn, stage_options options) = 0;
  virtual void do_fail(const std::string& message) = 0;
  virtual const std::string& do_path() const = 0;
};

namespace detail {

/// Runs a plugin's registration function so that no exception leaves the plugin: 0 = registered.
template <class F>
int run_plugin_registration(plugin_host* host, F&& register_roles) noexcept {
  if (host == nullptr) return 1;
  try {
    register_roles(*host);
    return 0;
  } catch (const std::exception& e) {
    host->fail(std::string("registration threw: ") + e.what());
  } catch (...) {
    host->fail("registration threw an exception that is not a std::exception");
  }
  return 1;
}

}  // namespace detail

}  // namespace crucible::runtime

#define CRUCIBLE_PLUGIN_EXPORT __attribute__((visibility("default")))

/// Defines a plugin's two entry points from `register_roles`, a function (or function object)
/// `void register_roles(crucible::runtime::plugin_host&)`. Use it once, at global scope, in one source file
/// of the plugin:
///   extern "C" const plugin_abi* crucible_plugin_abi();  // what the plugin was built against
///   extern "C" int crucible_plugin_register(plugin_host*);  // 0 = registered; called after the ABI check
#define CRUCIBLE_PLUGIN(register_roles)                                                                    \
  extern "C" CRUCIBLE_PLUGIN_EXPORT const ::crucible::runtime::plugin_abi* crucible_plugin_abi() {         \
    static constexpr ::crucible::runtime::plugin_abi abi = ::crucible::runtime::this_plugin_abi();         \
    return &abi;                                                                                           \
  }                                                                                                        \
  extern "C" CRUCIBLE_PLUGIN_EXPORT int crucible_plugin_register(::crucible::runtime::plugin_host* host) { \
    return ::crucible::runtime::detail::run_plugin_registration(host, register_roles);                     \
  }
