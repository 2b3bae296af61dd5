#include "actors/options/evaluation_config_of.hpp"

#include "actors/options/benchmark_section.hpp"
#include "actors/options/compiler_section.hpp"
#include "actors/options/verifier_section.hpp"

namespace crucible::actors {

kernels::evaluation_config evaluation_config_of(const runtime::config& cfg) {
  const auto& bench = cfg.section<benchmark_section>();
  kernels::evaluation_config ec;
  ec.compiler = cfg.section<compiler_section>();
  ec.worker = bench.worker;
  ec.runner = bench.runner;
  ec.eval = bench.eval;
  ec.judge = cfg.section<verifier_section>();
  return ec;
}

}  // namespace crucible::actors
