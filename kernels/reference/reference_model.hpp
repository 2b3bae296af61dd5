#pragma once
// What an evaluation needs of a reference, whatever computes it: the task's chain through LibTorch
// (reference_executor.hpp) or a KernelBench module in the embedded CPython (kernels/python/
// kernelbench_reference.hpp). The CPU backend of the evaluation protocol holds one of these, so both kinds of
// task are measured by the same protocol.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/abi/crucible_abi.h"
#include "kernels/abi/host_tensor.hpp"
#include "kernels/task/task_cost.hpp"

namespace crucible::kernels {

/// How input values are drawn. `nominal`: the task's own distributions (a chain's tensor_spec dist, a
/// KernelBench module's get_inputs()); `heavy_tailed`: activations with heavy tails (reference_executor.hpp
/// and kernelbench_reference.hpp say how each does it).
enum class input_variant { nominal, heavy_tailed };

class reference_model {
 public:
  virtual ~reference_model() = default;
  virtual const std::vector<int64_t>& output_shape() const = 0;
  virtual const std::string& output_dtype() const = 0;
  /// An uninitialized output buffer of the right shape and dtype.
  virtual host_tensor make_output() const = 0;
  /// Fills one preallocated tensor per task input (task order, contiguous, the task's shapes and dtypes),
  /// deterministic in (seed, variant). device < 0: host memory; else CUDA memory on that device.
  virtual void fill_inputs(const std::vector<cru_tensor>& dst, uint64_t seed, input_variant variant,
                           int device) const = 0;
  /// The reference on tensors described by views; writes *out when out != nullptr (with nullptr the result
  /// is dropped: what eager timing measures).
  virtual void run_views(const std::vector<cru_tensor>& inputs, const cru_tensor* out, int device) const = 0;
  /// The least work any correct candidate must do (task_cost.hpp), the roofline floor's numerator; zero
  /// where nothing can be said of every candidate.
  virtual task_cost minimum_cost() const = 0;
};

}  // namespace crucible::kernels
