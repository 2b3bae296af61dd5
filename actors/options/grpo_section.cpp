#include "actors/options/grpo_section.hpp"

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(grpo_section& s) {
  return {
      {"variant", &s.variant},
      {"lr", &s.lr},
      {"clip", &s.clip},
      {"clip_high", &s.clip_high},
      {"kl_coef", &s.kl_coef},
      {"reward_clip", &s.reward_clip},
      {"max_grad_norm", &s.max_grad_norm},
      {"entropy_coef", &s.entropy_coef},
      {"epochs", &s.epochs},
  };
}

status validate(const grpo_section& g, const runtime::config&) {
  if (g.variant != "grpo" && g.variant != "dr_grpo" && g.variant != "dapo")
    return make_error("grpo.variant: expected grpo, dr_grpo or dapo, got '" + g.variant + "'");
  if (!(g.lr > 0)) return make_error("grpo.lr: expected > 0");
  if (!(g.clip > 0 && g.clip < 1)) return make_error("grpo.clip: expected in (0, 1)");
  if (!(g.reward_clip > 0)) return make_error("grpo.reward_clip: expected > 0");
  if (g.epochs < 1) return make_error("grpo.epochs: expected >= 1");
  return {};
}

const bool registered = runtime::register_section<grpo_section>({fields, validate});

}  // namespace
}  // namespace crucible::actors
