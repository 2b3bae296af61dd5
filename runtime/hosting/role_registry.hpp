#pragma once
// Role name -> factory. The runtime never includes an actor: built-in actors register here (the CLI calls
// actors::register_builtin_roles) and plugin libraries register the same way, so a custom actor is as
// first-class as a built-in one.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/config/run_context.hpp"

namespace crucible::runtime {

/// What a role's factory gets: the run, the supervisor to ask for other roles' pools, and which instance
/// of the role it is making.
struct role_context {
  std::shared_ptr<const run_context> run;
  caf::actor supervisor;
  std::string role;
  int index = 0;
  caf::actor observer;  ///< receives (step_atom, step, progress line) from the learner; may be null
};

using role_factory = std::function<caf::actor(caf::actor_system&, const role_context&)>;

/// Thread contract: fill it before the actor system starts; read-only afterwards.
class role_registry {
 public:
  /// Adds or replaces a role.
  void add(const std::string& role, role_factory factory);
  const role_factory* find(const std::string& role) const;
  std::vector<std::string> roles() const;

 private:
  std::map<std::string, role_factory> factories_;
};

}  // namespace crucible::runtime
