// The plugin loader: every way a plugin fails to load gives an error a user can act on and leaves the
// registry as it was; a good plugin's stage is spawned from the registry and answers like a built-in one.
// The libraries are built by tests/CMakeLists.txt: the example (examples/plugin_stage) and one library per
// mode of tests/runtime/hosting/plugins/test_plugin.cpp.
#include "runtime/hosting/plugin_loader.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include <caf/all.hpp>

#include <gtest/gtest.h>

#include "messages/type_ids.hpp"
#include "runtime/hosting/plugin_api.hpp"

namespace crucible {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string example_plugin = std::string(CRUCIBLE_BINARY_DIR) + "/plugins/source_audit.so";

std::string test_plugin(const std::string& mode) {
  return std::string(CRUCIBLE_BINARY_DIR) + "/tests/plugins/" + mode + ".so";
}

// Stands in for the built-in roles (this test does not link the actors).
runtime::role_registry builtins() {
  runtime::role_registry r;
  for (const char* role :
       {"conductor", "generator", "compiler", "benchmarker", "verifier", "replay_buffer", "learner"})
    r.add(role, [](caf::actor_system&, const runtime::role_context&) { return caf::actor{}; });
  return r;
}

std::string load_error(const std::vector<std::string>& paths, runtime::role_registry& registry,
                       const runtime::plugin_load_options& options = {}) {
  auto before = registry.roles();
  auto r = runtime::load_plugins(paths, registry, options);
  EXPECT_FALSE(r) << "expected an error loading " << paths.back();
  EXPECT_EQ(registry.roles(), before) << "a failed load must leave the registry as it was";
  return r ? std::string() : r.message();
}

scored_candidate candidate_with(const std::string& id, const std::string& source,
                                const std::string& outcome) {
  scored_candidate c;
  c.cand.id = id;
  c.cand.group_id = "g0";
  c.cand.task = "bias_gelu";
  c.cand.source = source;
  c.cand.content_hash = "hash-" + id;
  c.judged.candidate_id = id;
  c.judged.outcome = outcome;
  c.judged.speedup = outcome == "pass" ? 1.7 : 0.0;
  c.judged.reward = c.judged.speedup;
  return c;
}

// Spawns `role` from the registry in a fresh actor system and asks it one stage request.
class stage_harness {
 public:
  explicit stage_harness(const runtime::role_registry& registry, double penalty = -1.0,
                         const std::string& settings_yaml = "")
      : sys_(cfg_), self_(sys_), registry_(registry) {
    auto run = std::make_shared<runtime::run_context>();
    // The penalty reaches a plugin through the verifier section, which the runtime knows only by its keys.
    auto cfg = runtime::parse_config(settings_yaml, {"verifier.penalty=" + std::to_string(penalty)});
    EXPECT_TRUE(cfg) << cfg.message();
    if (cfg) run->cfg = *cfg;
    run_ = run;
  }

  caf::actor spawn(const std::string& role, int index = 0) {
    const auto* f = registry_.find(role);
    if (f == nullptr) return {};
    runtime::role_context ctx{run_, caf::actor{}, role, index, caf::actor{}};
    caf::actor a = (*f)(sys_, ctx);
    if (a) spawned_.push_back(a);
    return a;
  }

  ~stage_harness() {
    for (const auto& a : spawned_) self_->send_exit(a, caf::exit_reason::user_shutdown);
  }

  // The verify stage's verdict, for a role replacing the verifier.
  std::optional<verdict> verify(const caf::actor& a, const scored_candidate& in) {
    std::optional<verdict> out;
    self_->request(a, 10s, stage_atom::value, stage_request{"verify", in, 0.0})
        .receive([&](scored_candidate& s) { out = std::move(s.judged); },
                 [&](caf::error& e) { ADD_FAILURE() << caf::to_string(e); });
    return out;
  }

  // The answer to a custom stage's message, or the error's text.
  std::pair<std::optional<scored_candidate>, std::string> ask(const caf::actor& a,
                                                              const scored_candidate& in) {
    std::optional<scored_candidate> out;
    std::string err;
    self_->request(a, 10s, stage_atom::value, stage_request{"custom", in, 0.0})
        .receive([&](scored_candidate& s) { out = std::move(s); },
                 [&](caf::error& e) { err = caf::to_string(e); });
    return {out, err};
  }

 private:
  caf::actor_system_config cfg_;
  caf::actor_system sys_;
  caf::scoped_actor self_;
  const runtime::role_registry& registry_;
  std::shared_ptr<const runtime::run_context> run_;
  std::vector<caf::actor> spawned_;
};

bool has_evidence_starting(const verdict& v, const std::string& prefix) {
  for (const auto& e : v.evidence)
    if (e.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(PluginLoader, MissingFileNamesThePathAndTheWorkingDirectory) {
  auto reg = builtins();
  auto msg = load_error({"no/such/plugin.so"}, reg);
  EXPECT_NE(msg.find("plugins[0] (no/such/plugin.so)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fs::current_path().string()), std::string::npos) << msg;
}

TEST(PluginLoader, EmptyPathAndDirectoryAreRefused) {
  auto reg = builtins();
  EXPECT_NE(load_error({""}, reg).find("empty path"), std::string::npos);
  EXPECT_NE(load_error({fs::temp_directory_path().string()}, reg).find("is a directory"), std::string::npos);
}

TEST(PluginLoader, AFileThatIsNotASharedLibraryGivesDlopensText) {
  auto path = fs::temp_directory_path() / ("crucible-not-a-plugin-" + std::to_string(::getpid()) + ".so");
  std::ofstream(path) << "this is a text file, not an ELF shared object\n";
  auto reg = builtins();
  auto msg = load_error({path.string()}, reg);
  fs::remove(path);
  EXPECT_NE(msg.find("cannot be loaded"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a shared library"), std::string::npos) << msg;
}

TEST(PluginLoader, ALibraryWithoutEntryPointsIsNotAPlugin) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("no_entry")}, reg);
  EXPECT_NE(msg.find("exports no Crucible entry point"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CRUCIBLE_PLUGIN"), std::string::npos) << msg;
}

TEST(PluginLoader, AnAbiMismatchIsRefusedBeforeRegistering) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("abi_mismatch")}, reg);
  EXPECT_NE(msg.find("plugin ABI 999"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rebuild"), std::string::npos) << msg;
  EXPECT_EQ(reg.find("should_not_register"), nullptr);
}

TEST(PluginLoader, ALayoutMismatchNamesTheStruct) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("layout_mismatch")}, reg);
  EXPECT_NE(msg.find("sizeof(scored_candidate)"), std::string::npos) << msg;
}

TEST(PluginLoader, AFailedRegistrationKeepsNothing) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("fails")}, reg);
  EXPECT_NE(msg.find("registration failed: TEST_PLUGIN_FAILS needs a setting that is missing"),
            std::string::npos)
      << msg;
  EXPECT_EQ(reg.find("half_registered"), nullptr);
}

TEST(PluginLoader, AnExceptionDuringRegistrationStaysInThePlugin) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("throws")}, reg);
  EXPECT_NE(msg.find("registration threw: registration exploded"), std::string::npos) << msg;
  EXPECT_EQ(reg.find("half_registered"), nullptr);
}

TEST(PluginLoader, ClashingWithABuiltinRoleIsAnErrorUnlessAskedFor) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("clash")}, reg);
  EXPECT_NE(msg.find("role 'verifier' is already registered"), std::string::npos) << msg;
  EXPECT_NE(msg.find("replace = true"), std::string::npos) << msg;

  // Asked for explicitly, a plugin replaces the built-in ...
  auto loaded = runtime::load_plugins({test_plugin("replace")}, reg);
  ASSERT_TRUE(loaded) << loaded.message();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].replaced, std::vector<std::string>{"verifier"});
  stage_harness h(reg);
  auto a = h.spawn("verifier");
  ASSERT_TRUE(a) << "the replacement is what the registry now spawns";
  auto v = h.verify(a, candidate_with("c1", "int x;", "pass"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->evidence, std::vector<std::string>{"replacement verifier"});

  // ... unless the caller forbids replacing.
  auto fresh = builtins();
  runtime::plugin_load_options strict;
  strict.allow_replace = false;
  msg = load_error({test_plugin("replace")}, fresh, strict);
  EXPECT_NE(msg.find("replacing roles is not allowed"), std::string::npos) << msg;
}

TEST(PluginLoader, RoleNamesAreValidatedWithReasons) {
  auto reg = builtins();
  auto msg = load_error({test_plugin("bad_name")}, reg);
  EXPECT_NE(msg.find("'verify' is a built-in stage"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'has space' is invalid"), std::string::npos) << msg;
  EXPECT_NE(msg.find("add_stage cannot replace the head role 'learner'"), std::string::npos) << msg;
}

TEST(PluginLoader, ListingAPluginTwiceIsAnErrorAndLoadingIsAllOrNothing) {
  auto reg = builtins();
  auto msg = load_error({example_plugin, example_plugin}, reg);
  EXPECT_NE(msg.find("plugins[1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("same library as plugins[0]"), std::string::npos) << msg;
  load_error({example_plugin, "missing.so"}, reg);
  EXPECT_EQ(reg.find("source_audit"), nullptr)
      << "the first plugin's role must not survive the second's error";
}

TEST(PluginLoader, TwoPluginsRegisteringOneRoleClash) {
  auto reg = builtins();
  ASSERT_TRUE(runtime::load_plugins({example_plugin}, reg));
  // The same library again, in a later call: its role now exists, so the second registration clashes.
  auto msg = load_error({example_plugin}, reg);
  EXPECT_NE(msg.find("role 'source_audit' is already registered"), std::string::npos) << msg;
}

TEST(PluginLoader, TheExamplePluginRegistersAStageThatMarksAndOverrulesVerdicts) {
  auto reg = builtins();
  runtime::config cfg;
  cfg.plugins = {example_plugin};
  auto loaded = runtime::load_configured_plugins(cfg, reg);  // the call crucible train and crucible node make
  ASSERT_TRUE(loaded) << loaded.message();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].roles, std::vector<std::string>{"source_audit"});
  EXPECT_TRUE((*loaded)[0].replaced.empty());
  EXPECT_TRUE(fs::path((*loaded)[0].path).is_absolute());
  ASSERT_NE(reg.find("source_audit"), nullptr);

  stage_harness h(reg, -2.5);
  auto a = h.spawn("source_audit");
  ASSERT_TRUE(a);

  // A clean candidate: marked, verdict untouched. Names in comments and strings are not calls.
  auto clean = candidate_with(
      "clean", "// system(\"rm\") would be bad\nconst char* s = \"getenv(\";\nint f();\n", "pass");
  auto [out, err] = h.ask(a, clean);
  ASSERT_TRUE(out) << err;
  EXPECT_EQ(out->judged.outcome, "pass");
  EXPECT_DOUBLE_EQ(out->judged.reward, 1.7);
  ASSERT_EQ(out->judged.evidence.size(), 1u);
  EXPECT_EQ(out->judged.evidence[0], "source_audit: 3 lines, no forbidden call");
  EXPECT_EQ(out->cand.id, "clean");

  // A candidate the verifier passed, calling a forbidden function: flagged, with the configured penalty.
  auto sneaky = candidate_with("sneaky", "int f() {\n  return getenv (\"X\") != 0;\n}\n", "pass");
  std::tie(out, err) = h.ask(a, sneaky);
  ASSERT_TRUE(out) << err;
  EXPECT_EQ(out->judged.outcome, "hack");
  EXPECT_EQ(out->judged.flags, std::vector<std::string>{"forbidden_call"});
  EXPECT_DOUBLE_EQ(out->judged.reward, -2.5);
  EXPECT_DOUBLE_EQ(out->judged.speedup, 0.0);
  EXPECT_TRUE(has_evidence_starting(out->judged, "source_audit: 3 lines, forbidden calls: getenv (line 2)"));
  EXPECT_TRUE(has_evidence_starting(out->judged, "forbidden_call: line 2: calls getenv"));

  // One that did not compile keeps its outcome; the audit is still recorded.
  auto broken = candidate_with("broken", "system(0)", "compile_error");
  std::tie(out, err) = h.ask(a, broken);
  ASSERT_TRUE(out) << err;
  EXPECT_EQ(out->judged.outcome, "compile_error");
  EXPECT_TRUE(out->judged.flags.empty());
  EXPECT_TRUE(has_evidence_starting(out->judged, "source_audit: 1 lines, forbidden calls: system"));
}

TEST(PluginLoader, PluginActorsAndHostGuards) {
  auto reg = builtins();
  auto loaded = runtime::load_plugins({test_plugin("actor")}, reg);
  ASSERT_TRUE(loaded) << loaded.message();
  EXPECT_EQ((*loaded)[0].roles, (std::vector<std::string>{"tagger", "thrower", "rewriter", "blocker",
                                                          "configured", "bad_factory"}));
  stage_harness h(reg);

  // A role whose actor the plugin spawns with CAF itself answers the stage protocol.
  auto tagger = h.spawn("tagger", 3);
  ASSERT_TRUE(tagger);
  auto [out, err] = h.ask(tagger, candidate_with("c1", "int x;", "pass"));
  ASSERT_TRUE(out) << err;
  EXPECT_TRUE(has_evidence_starting(out->judged, "tagged by tagger #3"));

  // A detached (blocking) stage.
  auto blocker = h.spawn("blocker");
  ASSERT_TRUE(blocker);
  std::tie(out, err) = h.ask(blocker, candidate_with("c2", "int x;", "pass"));
  ASSERT_TRUE(out) << err;
  EXPECT_TRUE(has_evidence_starting(out->judged, "blocking stage blocker"));

  // A stage function that throws is a failed stage, not a dead process; the actor keeps serving.
  auto thrower = h.spawn("thrower");
  ASSERT_TRUE(thrower);
  std::tie(out, err) = h.ask(thrower, candidate_with("c3", "int x;", "pass"));
  EXPECT_FALSE(out);
  EXPECT_NE(err.find("stage exploded on c3"), std::string::npos) << err;
  std::tie(out, err) = h.ask(thrower, candidate_with("c4", "int x;", "pass"));
  EXPECT_NE(err.find("stage exploded on c4"), std::string::npos) << err;

  // A stage may amend the verdict, never the candidate.
  auto rewriter = h.spawn("rewriter");
  ASSERT_TRUE(rewriter);
  std::tie(out, err) = h.ask(rewriter, candidate_with("c5", "int x;", "pass"));
  EXPECT_FALSE(out);
  EXPECT_NE(err.find("changed the candidate's source"), std::string::npos) << err;

  // A factory that throws gives a role that could not start (the supervisor's "null actor").
  EXPECT_FALSE(h.spawn("bad_factory"));

  // Without settings, a stage reads its fallbacks.
  auto plain = h.spawn("configured");
  std::tie(out, err) = h.ask(plain, candidate_with("c6", "int x;", "pass"));
  ASSERT_TRUE(out) << err;
  EXPECT_TRUE(has_evidence_starting(out->judged, "greeting unset, limits.lines unset, 0 words"))
      << out->judged.evidence.back();
}

// A plugin role reads its own subtree of the config (plugin_settings.<role>) and the stable view of the run,
// never the host's config structs.
TEST(PluginLoader, APluginRoleReadsItsOwnSettingsAndTheRunsStableView) {
  auto reg = builtins();
  ASSERT_TRUE(runtime::load_plugins({test_plugin("actor")}, reg));
  stage_harness h(reg, -1.0,
                  "target: cpu\nrun:\n  seed: 42\nplugin_settings:\n  configured:\n    greeting: hello\n"
                  "    limits:\n      lines: 300\n    words: [a, b, c]\n  tagger:\n    greeting: not mine\n");
  auto a = h.spawn("configured");
  ASSERT_TRUE(a);
  auto [out, err] = h.ask(a, candidate_with("c1", "int x;", "pass"));
  ASSERT_TRUE(out) << err;
  EXPECT_EQ(out->judged.evidence.back(),
            "greeting hello, limits.lines 300, 3 words, target cpu, seed 42, 0 tasks");
}

}  // namespace
}  // namespace crucible
