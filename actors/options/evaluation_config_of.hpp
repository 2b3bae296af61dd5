#pragma once
// The one-candidate evaluation (`crucible eval`, the corpus bench, the GPU tests) configured from a run
// config: the compiler, benchmark and verifier sections, one mapping for every caller.
#include "kernels/eval/evaluate.hpp"
#include "runtime/config/config.hpp"

namespace crucible::actors {

/// The sections' options; the caller picks the device and the worker binary where it differs.
kernels::evaluation_config evaluation_config_of(const runtime::config& cfg);

}  // namespace crucible::actors
