// Plugins for tests/runtime/hosting/plugin_loader_test.cpp, one shared library per mode (tests/CMakeLists.txt
// builds this file several times with a different TEST_PLUGIN_* definition): each exercises one way loading
// succeeds or fails.
#include <stdexcept>
#include <string>

#include "runtime/hosting/plugin_api.hpp"

#if defined(TEST_PLUGIN_ACTOR) || defined(TEST_PLUGIN_REPLACE)
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#endif

namespace cr = crucible::runtime;

#if defined(TEST_PLUGIN_NO_ENTRY)

// A shared library, but not a Crucible plugin.
extern "C" __attribute__((visibility("default"))) int not_a_plugin() {
  return 42;
}

#elif defined(TEST_PLUGIN_ABI_MISMATCH)

// Claims an ABI this crucible does not have; registering must never be attempted.
extern "C" CRUCIBLE_PLUGIN_EXPORT const cr::plugin_abi* crucible_plugin_abi() {
  static constexpr cr::plugin_abi abi = [] {
    auto a = cr::this_plugin_abi();
    a.version = 999;
    return a;
  }();
  return &abi;
}
extern "C" CRUCIBLE_PLUGIN_EXPORT int crucible_plugin_register(cr::plugin_host* host) {
  host->add_stage("should_not_register",
                  [](crucible::scored_candidate c, const cr::plugin_context&) { return c; });
  return 0;
}

#elif defined(TEST_PLUGIN_LAYOUT_MISMATCH)

// The right ABI version, built against another layout of the messages.
extern "C" CRUCIBLE_PLUGIN_EXPORT const cr::plugin_abi* crucible_plugin_abi() {
  static constexpr cr::plugin_abi abi = [] {
    auto a = cr::this_plugin_abi();
    a.scored_candidate_size += 8;
    return a;
  }();
  return &abi;
}
extern "C" CRUCIBLE_PLUGIN_EXPORT int crucible_plugin_register(cr::plugin_host*) {
  return 0;
}

#elif defined(TEST_PLUGIN_FAILS)

// Registers one role, then reports that it cannot work: the role must not be kept.
void register_roles(cr::plugin_host& host) {
  host.add_stage("half_registered",
                 [](crucible::scored_candidate c, const cr::plugin_context&) { return c; });
  host.fail("TEST_PLUGIN_FAILS needs a setting that is missing");
}
CRUCIBLE_PLUGIN(register_roles)

#elif defined(TEST_PLUGIN_THROWS)

void register_roles(cr::plugin_host& host) {
  host.add_stage("half_registered",
                 [](crucible::scored_candidate c, const cr::plugin_context&) { return c; });
  throw std::runtime_error("registration exploded");
}
CRUCIBLE_PLUGIN(register_roles)

#elif defined(TEST_PLUGIN_CLASH)

// Registers the built-in role `verifier` without asking to replace it.
void register_roles(cr::plugin_host& host) {
  host.add_stage("verifier", [](crucible::scored_candidate c, const cr::plugin_context&) { return c; });
}
CRUCIBLE_PLUGIN(register_roles)

#elif defined(TEST_PLUGIN_REPLACE)

// Replaces the built-in role `verifier` on purpose, with an actor answering the stage message.
caf::behavior replacement_verifier(caf::event_based_actor*) {
  return {
      [](crucible::stage_atom, crucible::stage_request req) {
        crucible::verdict v;
        v.candidate_id = req.scored.cand.id;
        v.outcome = "pass";
        v.evidence.push_back("replacement verifier");
        req.scored.judged = std::move(v);
        return std::move(req.scored);
      },
  };
}

void register_roles(cr::plugin_host& host) {
  cr::role_options opts;
  opts.replace = true;
  host.add_role(
      "verifier",
      [](caf::actor_system& sys, const cr::plugin_context&) { return sys.spawn(replacement_verifier); },
      opts);
}
CRUCIBLE_PLUGIN(register_roles)

#elif defined(TEST_PLUGIN_ACTOR)

// The full-power path: a role whose actors the plugin spawns with CAF itself, and a stage whose function
// throws or rewrites the candidate (the host must turn both into errors), and a blocking stage.
caf::behavior tagging_stage(caf::event_based_actor*, std::string tag) {
  return {
      [=](crucible::stage_atom, crucible::stage_request req) {
        req.scored.judged.evidence.push_back(tag);
        return std::move(req.scored);
      },
  };
}

void register_roles(cr::plugin_host& host) {
  host.add_role("tagger", [](caf::actor_system& sys, const cr::plugin_context& ctx) {
    return sys.spawn(tagging_stage, "tagged by " + ctx.role + " #" + std::to_string(ctx.index));
  });
  host.add_stage("thrower",
                 [](crucible::scored_candidate c, const cr::plugin_context&) -> crucible::scored_candidate {
                   throw std::runtime_error("stage exploded on " + c.cand.id);
                 });
  host.add_stage("rewriter", [](crucible::scored_candidate c, const cr::plugin_context&) {
    c.cand.source += "\n// appended";
    return c;
  });
  cr::stage_options blocking;
  blocking.blocking = true;
  host.add_stage(
      "blocker",
      [](crucible::scored_candidate c, const cr::plugin_context& ctx) {
        c.judged.evidence.push_back("blocking stage " + ctx.role);
        return c;
      },
      blocking);
  // A stage that reports what it sees of the run: its settings and the stable run view.
  host.add_stage("configured", [](crucible::scored_candidate c, const cr::plugin_context& ctx) {
    c.judged.evidence.push_back("greeting " + ctx.setting("greeting", "unset") + ", limits.lines " +
                                ctx.setting("limits.lines", "unset") + ", " +
                                std::to_string(ctx.setting_list("words").size()) + " words, target " +
                                ctx.run->target + ", seed " + std::to_string(ctx.run->seed) + ", " +
                                std::to_string(ctx.run->tasks.size()) + " tasks");
    return c;
  });
  host.add_role("bad_factory", [](caf::actor_system&, const cr::plugin_context&) -> caf::actor {
    throw std::runtime_error("factory exploded");
  });
}
CRUCIBLE_PLUGIN(register_roles)

#elif defined(TEST_PLUGIN_BAD_NAME)

void register_roles(cr::plugin_host& host) {
  host.add_stage("verify", [](crucible::scored_candidate c, const cr::plugin_context&) { return c; });
  host.add_stage("has space", [](crucible::scored_candidate c, const cr::plugin_context&) { return c; });
  cr::stage_options replace;
  replace.replace = true;
  host.add_stage(
      "learner", [](crucible::scored_candidate c, const cr::plugin_context&) { return c; }, replace);
}
CRUCIBLE_PLUGIN(register_roles)

#else
#error "build with one TEST_PLUGIN_* definition"
#endif
