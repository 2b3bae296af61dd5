#include "actors/options/policy_section.hpp"

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(policy_section& s) {
  return {
      {"d_model", &s.d_model},         {"layers", &s.layers},   {"heads", &s.heads},
      {"max_context", &s.max_context}, {"threads", &s.threads},
  };
}

status validate(const policy_section& p, const runtime::config&) {
  if (!(p.d_model >= 8 && p.heads >= 1 && p.d_model % p.heads == 0))
    return make_error("policy.d_model: expected >= 8 and divisible by policy.heads");
  if (p.layers < 1) return make_error("policy.layers: expected >= 1");
  if (p.max_context < 32) return make_error("policy.max_context: expected >= 32");
  if (p.threads < 1) return make_error("policy.threads: expected >= 1");
  return {};
}

void resolve(policy_section& p, const runtime::config& c, const runtime::key_is_set&) {
  p.target = c.target;
}

const bool registered = runtime::register_section<policy_section>({fields, validate, resolve});

}  // namespace
}  // namespace crucible::actors
