#pragma once
// The least work of a KernelBench module (DESIGN.md §6, "physics"), read from its forward pass: every ATen
// op it dispatches is recorded, and the bytes no correct module can avoid are found by walking back from
// the output — an input counts when every element of it must be read, through ops known to read every
// element of what they are given (elementwise, reductions, products, norms, windows that leave no gap), and
// the output counts when it must be written (a tensor of its own, not a view of an input or a broadcast).
// Any op not known, a selection (slicing, indexing, masks) or a write into a view ends the walk there: a
// floor too low only leaves a check undone, a floor too high would call an honest module impossible. No
// FLOPs: a rewrite may change the products, and a lower precision may do them faster than the peak measured.
// Includes LibTorch: include only from .cpp files.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "kernels/python/kernelbench_module.hpp"
#include "kernels/task/task_cost.hpp"

namespace crucible::kernels {

struct module_cost {
  task_cost cost;       ///< bytes only (flops 0); all 0 when nothing could be counted
  std::string account;  ///< what was counted, or why nothing was ("the output is a view of an input")
};

/// kernelbench_forward() on `inputs` with the trace around it: the output, and the cost into `*cost`. The
/// trace never fails the pass: when it cannot be taken, the cost is 0 and the account says why.
expected<at::Tensor> traced_forward(kernelbench_module& m, const std::vector<at::Tensor>& inputs,
                                    module_cost* cost);

}  // namespace crucible::kernels
