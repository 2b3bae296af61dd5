#pragma once
// grpo.*: the learner's update (policies/grpo_trainer.hpp): the variant, its step size, clipping, KL to the
// reference and reward clipping. The sampling temperature comes from generator.temperature.
#include "policies/grpo_trainer.hpp"

namespace crucible::actors {

struct grpo_section : policies::grpo_config {
  static constexpr const char* section_name = "grpo";
};

}  // namespace crucible::actors
