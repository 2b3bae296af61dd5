#pragma once
// This core's measured peaks, the denominator of the roofline floor (task_cost.hpp) on the CPU target: one
// thread's streaming bandwidth from memory and its fused multiply-add rate at the widest vector width the
// processor has (candidates are compiled with -march=native and run on one thread). Measured once per
// worker, on first use, in ~0.3 s, and again before a time below the floor is called impossible.
namespace crucible::kernels {

struct machine_peak {
  double bytes_per_s = 0.0;  ///< the larger of read and write streaming bandwidth
  double flops_per_s = 0.0;
};

/// Measured on the first call, then remembered; with `again`, measured once more and each figure kept at the
/// larger of the two (a peak measured while other processes load the machine reads low, and a floor from it
/// would be too high). Not thread-safe.
const machine_peak& cpu_peak(bool again = false);

}  // namespace crucible::kernels
