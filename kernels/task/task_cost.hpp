#pragma once
// The least work any correct candidate for a task must do (DESIGN.md §6, "physics"): the bytes it must move
// and the multiply-adds it cannot avoid. Divided by a device's measured peaks, it is a time below which a
// measurement is impossible, and against which a real one is a fraction of peak (KernelBench v3's metric).
// Conservative by construction, since an honest algebraic rewrite must never look impossible.
#include <string>

#include "messages/task.hpp"

namespace crucible::kernels {

struct task_cost {
  double bytes = 0.0;  ///< the output written once and the chain's first input read once
  double flops = 0.0;  ///< GEMM, BMM, convolution and attention products whose whole result reaches the
                       ///< output; 0 when a reduction follows (a rewrite may shrink the product then)
  std::string basis;   ///< what was counted where a trace found it (a KernelBench module), else empty
};

/// The cost of a valid task (an invalid one costs 0).
task_cost minimum_cost(const task_spec& task);

/// The time `cost` takes at the given peaks (either peak 0: that term is left out), in milliseconds.
double floor_ms(const task_cost& cost, double peak_bytes_per_s, double peak_flops_per_s);

}  // namespace crucible::kernels
