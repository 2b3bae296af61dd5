#pragma once
// The reference: the task's chain executed op by op through LibTorch ("eager"), the baseline every speedup
// is measured against. Also makes the inputs every evaluation uses. LibTorch stays in the .cpp.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/abi/crucible_abi.h"
#include "kernels/abi/host_tensor.hpp"
#include "kernels/reference/reference_model.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// How this reference draws input values (input_variant, reference_model.hpp). `nominal` follows each
/// tensor_spec's dist:
///   normal: N(0, scale^2);  uniform: U[lo, hi);  positive: scale * (|N(0, 1)| + 0.05), so never near 0;
///   heavy_tailed: scale * t, t Student-t with 2 degrees of freedom clipped to [-1e3, 1e3].
/// `heavy_tailed` draws every activation (param: false) as heavy_tailed, keeping the sign domain: a
/// positive input becomes scale * |t| + 0.05 scale, a uniform one with lo >= 0 becomes scale * |t| + lo.
/// Parameters keep their nominal distribution and values (both variants of a seed share the weights).
/// Values come from std::mt19937_64 seeded from (seed, input index, variant) and samplers of our own,
/// so they are the same with every standard library and LibTorch version.
class reference_executor final : public reference_model {
 public:
  /// Validates the task (infer_shapes) and prepares the op sequence. Floating dtypes only.
  static expected<reference_executor> create(const task_spec& task);
  reference_executor(reference_executor&&) noexcept;
  reference_executor& operator=(reference_executor&&) noexcept;
  ~reference_executor() override;

  const task_spec& task() const;
  const std::vector<int64_t>& output_shape() const override;
  const std::string& output_dtype() const override;

  /// One tensor per task input, in task order, deterministic in (seed, variant), at fresh addresses.
  std::vector<host_tensor> make_inputs(uint64_t seed, input_variant variant = input_variant::nominal) const;
  /// An uninitialized output buffer of the right shape and dtype.
  host_tensor make_output() const override;

  /// Runs the eager reference on `inputs` (wrapped in place, not copied) and writes the result to `out`.
  /// Inputs and output must have the task's dtypes and shapes (std::invalid_argument otherwise: a caller
  /// bug, not a data error). Thread-safe for concurrent calls on one executor.
  void run(const std::vector<host_tensor>& inputs, host_tensor& out) const;

  /// Fills one preallocated tensor per task input (task order, contiguous, the task's shapes and dtypes) with
  /// values drawn as make_inputs(seed, variant) describes. device < 0: host memory, exactly make_inputs'
  /// values. device >= 0: CUDA memory on that device, drawn there by LibTorch from the same distributions
  /// with the device's default generator borrowed under its lock (seeded from (seed, input index, variant),
  /// its state restored after); deterministic for a LibTorch build, not bit-identical to the host values.
  /// Work is ordered on LibTorch's current stream of that device. std::invalid_argument on a view mismatch.
  void fill_inputs(const std::vector<cru_tensor>& dst, uint64_t seed, input_variant variant,
                   int device) const override;

  /// The eager reference on tensors described by views (host memory when device < 0, else CUDA memory on
  /// `device`; ops go to LibTorch's current stream, which the caller sets). Writes *out when out != nullptr;
  /// with nullptr the result stays in LibTorch's own tensor and is dropped (what eager timing measures).
  /// Strided views are read as they are. Thread-safe as run().
  void run_views(const std::vector<cru_tensor>& inputs, const cru_tensor* out, int device) const override;
  /// The chain's cost (task_cost.hpp's minimum_cost).
  task_cost minimum_cost() const override;

  /// Runs the eager reference on `inputs` and returns the milliseconds the ops took (from the first op's
  /// start to the last op's end; the result is produced into LibTorch's own tensor and dropped, so no
  /// copy counts against eager).
  double run_timed(const std::vector<host_tensor>& inputs) const;

 private:
  struct impl;
  explicit reference_executor(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

/// LibTorch's intra-op threads for the reference (the timing protocol runs both sides on one thread).
void set_reference_threads(int threads);

/// Turns TF32 off for cuBLAS and cuDNN in LibTorch, so the CUDA reference is true float32 (a candidate
/// would otherwise be judged against a less precise baseline). Process-wide; call before timing.
void set_reference_strict_fp32();

}  // namespace crucible::kernels
