#pragma once
// A benchmark result that came over the wire, checked before the head uses it. The head cannot re-measure a
// remote benchmark, but it can refuse one whose figures contradict themselves: a speedup claimed without
// being timed, or one that does not follow from the times the result carries (each bucket's speedup is its
// eager mean over its candidate mean, the speedup their median), or times that are not finite positive
// numbers. A node that forges a verdict must then forge a whole consistent measurement, and the verifier
// still judges it on the head.
#include "messages/evaluation.hpp"
#include "messages/expected.hpp"

namespace crucible::runtime {

/// Empty when `r` is consistent; else what does not add up.
status check_remote_bench(const bench_result& r);

}  // namespace crucible::runtime
