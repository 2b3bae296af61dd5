#include "actors/options/self_supervised_section.hpp"

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(self_supervised_section& s) {
  return {
      {"max_steps", &s.max_steps},
      {"max_minutes", &s.max_minutes},
      {"plateau_steps", &s.plateau_steps},
      {"min_gain", &s.min_gain},
  };
}

status validate(const self_supervised_section& s, const runtime::config&) {
  if (s.max_steps < 1) return make_error("self_supervised.max_steps: expected >= 1");
  if (!(s.max_minutes > 0)) return make_error("self_supervised.max_minutes: expected > 0");
  if (s.plateau_steps < 1) return make_error("self_supervised.plateau_steps: expected >= 1");
  if (!(s.min_gain >= 0)) return make_error("self_supervised.min_gain: expected >= 0");
  return {};
}

const bool registered = runtime::register_section<self_supervised_section>({fields, validate});

}  // namespace
}  // namespace crucible::actors
