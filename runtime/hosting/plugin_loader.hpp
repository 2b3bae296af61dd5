#pragma once
// Loads plugin shared libraries (runtime/hosting/plugin_api.hpp, docs/plugins.md) and lets them register
// roles in a role registry. Called by `crucible train` and `crucible node` right after the built-in roles are
// registered, before the actor system starts. Every failure is an error value whose message names the
// plugin (its index in `plugins:` and its path) and what to do about it.
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/config/config.hpp"
#include "runtime/hosting/role_registry.hpp"

namespace crucible::runtime {

struct plugin_load_options {
  /// Whether a plugin may replace an already registered role when it asks to (role_options::replace).
  /// False turns every clash into an error, asked for or not.
  bool allow_replace = true;
};

/// What one plugin contributed.
struct loaded_plugin {
  std::string path;                   ///< absolute path of the library
  std::vector<std::string> roles;     ///< the roles it registered, in order
  std::vector<std::string> replaced;  ///< of those, the ones that replaced a role registered before it
};

/// Loads each library of `paths` in order (a relative path is taken from the working directory) and runs
/// its registration against `registry`. All or nothing: on an error `registry` is left as it was. Errors:
/// a missing file, a file dlopen refuses (not a shared library, a missing dependency or undefined symbol:
/// dlopen's own text), a library without the entry points, an ABI that differs from this executable's (the
/// differing fields), a registration that failed or threw, a role name that is invalid or clashes with an
/// existing role (a built-in, or one an earlier plugin added) without role_options::replace, and a library
/// listed twice. Libraries stay loaded for the life of the process, also after an error.
/// Thread contract: call before the actor system that uses `registry` starts; not concurrently.
expected<std::vector<loaded_plugin>> load_plugins(const std::vector<std::string>& paths,
                                                  role_registry& registry,
                                                  const plugin_load_options& options = {});

/// load_plugins(cfg.plugins, registry): the one call `crucible train` and `crucible node` make after
/// actors::register_builtin_roles. Logs each plugin and the roles it added.
expected<std::vector<loaded_plugin>> load_configured_plugins(const config& cfg, role_registry& registry);

/// The log lines load_configured_plugins writes: each plugin and the roles it added (for a caller that
/// loads its plugins before its log exists).
void log_loaded_plugins(const std::vector<loaded_plugin>& loaded);

}  // namespace crucible::runtime
