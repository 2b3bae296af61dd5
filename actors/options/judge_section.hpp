#pragma once
// judge.*: the optional judge stage (pipeline: [..., verify, judge]; kernels/verify/outlier_review.hpp):
// which passes it reviews, against which confirmed cases, with which reviewer.
#include "kernels/verify/outlier_review.hpp"

namespace crucible::actors {

struct judge_section : kernels::review_options {
  static constexpr const char* section_name = "judge";
};

}  // namespace crucible::actors
