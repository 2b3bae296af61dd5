#pragma once
// A run's state in Prometheus' text exposition format (version 0.0.4), served at /metrics: counters and
// gauges named crucible_*, with units in the name and labels for role, outcome, reason, task and node.
#include <cstdint>
#include <map>
#include <string>

#include "messages/control.hpp"

namespace crucible::runtime {

struct run_sample {
  status_report status;                     ///< the head's, as `crucible status` reads it
  std::map<std::string, int64_t> outcomes;  ///< stored candidates by outcome (the replay database)
  bool cuda = false;                        ///< the target's benchmarkers hold GPUs
};

/// The exposition: every family with its HELP and TYPE, label values escaped.
std::string prometheus_text(const run_sample& s);

/// The share of the benchmarker's members with work outstanding (requests outstanding over members, at most
/// 1; 0 without members): on the CUDA target, how busy the run's GPU slots are.
double benchmarker_busy(const status_report& r);

}  // namespace crucible::runtime
