#pragma once
// generator.*: how generators sample from the policy. The learner recomputes log-probs at the same
// temperature, so the ratio to the sampling log-probs starts at 1.
namespace crucible::actors {

struct generator_section {
  static constexpr const char* section_name = "generator";
  double temperature = 1.0;
};

}  // namespace crucible::actors
