#include "actors/options/generator_section.hpp"

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(generator_section& s) {
  return {{"temperature", &s.temperature}};
}

status validate(const generator_section& g, const runtime::config&) {
  if (!(g.temperature > 0)) return make_error("generator.temperature: expected > 0");
  return {};
}

const bool registered = runtime::register_section<generator_section>({fields, validate});

}  // namespace
}  // namespace crucible::actors
