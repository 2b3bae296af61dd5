#include "actors/roles.hpp"

namespace crucible::actors {

void register_builtin_roles(runtime::role_registry& registry) {
  registry.add("conductor", spawn_conductor);
  registry.add("generator", spawn_generator);
  registry.add("compiler", spawn_compiler);
  registry.add("benchmarker", spawn_benchmarker);
  registry.add("verifier", spawn_verifier);
  registry.add("judge", spawn_judge);
  registry.add("replay_buffer", spawn_replay_buffer);
  registry.add("learner", spawn_learner);
}

}  // namespace crucible::actors
