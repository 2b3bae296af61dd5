#include "runtime/config/config_sections.hpp"

#include <cstdio>
#include <cstdlib>

namespace crucible::runtime {
namespace {

std::vector<section_schema>& registry() {
  static std::vector<section_schema> sections;
  return sections;
}

}  // namespace

void register_config_section(section_schema schema) {
  for (const auto& s : registry())
    if (s.name == schema.name) {
      std::fprintf(stderr, "crucible: config section '%s' is registered twice\n", schema.name.c_str());
      std::abort();
    }
  registry().push_back(std::move(schema));
}

const std::vector<section_schema>& config_section_schemas() {
  return registry();
}

std::any& config_sections::slot(const section_schema& schema) {
  auto& v = values_[schema.name];
  if (!v.has_value()) v = schema.make();
  return v;
}

}  // namespace crucible::runtime
