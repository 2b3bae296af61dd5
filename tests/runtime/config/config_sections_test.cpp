// A section registered from outside the runtime (as actors/options registers the domain's): its keys are
// parsed, checked, resolved against other keys, dumped and bound to a run directory by the runtime's one
// key table, without the runtime knowing its type.
#include "runtime/config/config_sections.hpp"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include <gtest/gtest.h>

#include "runtime/config/config.hpp"
#include "runtime/config/run_context.hpp"

namespace crucible::runtime {
namespace {

struct probe_section {
  static constexpr const char* section_name = "probe";
  int64_t level = 3;
  std::string mode = "plain";
  std::vector<std::string> tags;
  std::string log;       ///< bound to the run directory
  bool derived = false;  ///< resolved from the target unless set
};

field_list probe_fields(probe_section& s) {
  return {{"level", &s.level}, {"mode", &s.mode}, {"tags", &s.tags}, {"derived", &s.derived}};
}

status probe_validate(const probe_section& s, const config& c) {
  if (s.level < 0) return make_error("probe.level: expected >= 0");
  if (s.level > c.run.max_steps) return make_error("probe.level: expected at most run.max_steps");
  return {};
}

void probe_resolve(probe_section& s, const config& c, const key_is_set& set) {
  if (!set("probe.derived")) s.derived = c.target == "cuda";
}

status probe_bind(probe_section& s, const std::string& run_dir) {
  s.log = run_dir + "/probe.log";
  return {};
}

const bool registered =
    register_section<probe_section>({probe_fields, probe_validate, probe_resolve, probe_bind});

TEST(ConfigSections, ARegisteredSectionIsParsedCheckedAndResolved) {
  ASSERT_TRUE(registered);
  auto d = parse_config("");
  ASSERT_TRUE(d) << d.message();
  EXPECT_EQ(d->section<probe_section>().level, 3);
  EXPECT_FALSE(d->section<probe_section>().derived);

  auto c = parse_config("target: cuda\nprobe:\n  level: 5\n  tags: [a, b]\n", {"probe.mode=fancy"});
  ASSERT_TRUE(c) << c.message();
  const auto& p = c->section<probe_section>();
  EXPECT_EQ(p.level, 5);
  EXPECT_EQ(p.mode, "fancy");
  EXPECT_EQ(p.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(p.derived) << "resolved from the target";
  auto kept = parse_config("target: cuda\nprobe: {derived: false}\n");
  ASSERT_TRUE(kept) << kept.message();
  EXPECT_FALSE(kept->section<probe_section>().derived) << "a key the file sets is never resolved over";
  EXPECT_DOUBLE_EQ(*config_number(*c, "probe.level"), 5.0);
}

TEST(ConfigSections, ItsErrorsNameItsKeys) {
  auto unknown = parse_config("probe: {levle: 1}\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.message().find("unknown key 'probe.levle'"), std::string::npos) << unknown.message();
  auto type = parse_config("probe: {level: high}\n");
  ASSERT_FALSE(type);
  EXPECT_NE(type.message().find("probe.level: expected an integer, got 'high'"), std::string::npos);
  auto cross = parse_config("run: {max_steps: 2}\nprobe: {level: 4}\n");
  ASSERT_FALSE(cross);
  EXPECT_NE(cross.message().find("probe.level: expected at most run.max_steps"), std::string::npos);
  auto scalar = parse_config("probe: 3\n");
  ASSERT_FALSE(scalar);
  EXPECT_NE(scalar.message().find("'probe' is a section"), std::string::npos) << scalar.message();
}

TEST(ConfigSections, ItRoundTripsThroughTheDumpAndCopiesWithTheConfig) {
  auto c = parse_config("probe: {level: 1, tags: [x]}\n");
  ASSERT_TRUE(c) << c.message();
  auto back = parse_config(to_yaml(*c));
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->section<probe_section>().tags, std::vector<std::string>{"x"});
  config copy = *back;
  copy.section<probe_section>().level = 2;
  EXPECT_EQ(back->section<probe_section>().level, 1) << "a copy of the config owns its sections";
  EXPECT_EQ(copy.section<probe_section>().level, 2);
  config fresh;  // never parsed: the section reads as its defaults
  EXPECT_EQ(std::as_const(fresh).section<probe_section>().level, 3);
}

TEST(ConfigSections, APreparedRunBindsItsPathsInTheRunDirectory) {
  auto dir = std::filesystem::temp_directory_path() / ("crucible-sections-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto c = parse_config("run: {dir: '" + dir.string() + "'}\n");
  ASSERT_TRUE(c) << c.message();
  auto run = prepare_run(*c, false);
  ASSERT_TRUE(run) << run.message();
  EXPECT_EQ((*run)->cfg.section<probe_section>().log, (*run)->dir + "/probe.log");
  EXPECT_TRUE(c->section<probe_section>().log.empty()) << "the parsed config is not changed";
  std::filesystem::remove_all(dir);
}

TEST(ConfigSections, ASecondSectionOfOneNameIsABuildMistake) {
  EXPECT_DEATH(register_section<probe_section>({probe_fields}), "registered twice");
}

}  // namespace
}  // namespace crucible::runtime
