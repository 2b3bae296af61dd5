#include "actors/policy_options_of.hpp"

#include "actors/options/policy_section.hpp"
#include "runtime/pipeline/training_stages.hpp"

namespace crucible::actors {

expected<policies::policy_options> policy_options_of(const runtime::config& cfg, bool for_training) {
  const auto& s = cfg.section<policy_section>();
  auto kind = policies::parse_policy_kind(s.kind);
  if (!kind) return make_error("policy.kind: expected program, lm or remote, got '" + s.kind + "'");
  policies::policy_options o;
  o.kind = *kind;
  o.program = s;
  o.lm = s.lm;
  if (for_training) o.lm.dtype = "f32";
  o.remote = s.remote;
  return o;
}

policies::learning_objective objective_of(const runtime::config& cfg) {
  auto stages = runtime::parse_stage_list(cfg.stages);
  if (stages && stages->size() == 1 && stages->front() == runtime::training_stage::self_supervised)
    return policies::learning_objective::reinforce;
  return policies::learning_objective::grpo;
}

}  // namespace crucible::actors
