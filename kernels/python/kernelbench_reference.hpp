#pragma once
// A KernelBench problem as a Crucible task: the task_spec that describes it (its inputs as get_inputs()
// draws them, KernelBench's tolerances, the file's source as task.module), and its Model as the evaluation
// protocol's reference (reference_model.hpp), run in the worker's embedded CPython. On the CPU, candidates
// (`ModelNew`) run in a sealed process of their own (kernels/kernelbench_host), never beside it; on CUDA
// they run beside it in the worker (kernelbench_candidate.hpp), which then watches what the reference
// computes with (watch(), changes()).
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/reference/reference_model.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// The seed both the reference Model and a candidate's ModelNew are built under, so that parameters made
/// in the same order are equal (KernelBench's harness seeds both constructions alike).
constexpr uint64_t kernelbench_model_seed = 42;

/// KernelBench's tolerances (its harness: allclose with atol = rtol = 1e-2).
constexpr double kernelbench_tolerance = 1e-2;

/// The task a KernelBench problem file is: `name`, family "kernelbench", the first line of Model's
/// docstring, inputs as get_inputs() draws them at seed 0 (named after forward()'s parameters), the
/// tolerances above, targets cpu and cuda, and the file's source as task.module. An error naming the file
/// when it does not load, draws a non-tensor input, or its forward pass fails.
expected<task_spec> kernelbench_task(const std::string& path, const std::string& name, int device = -1);
/// The same from a problem's text (a published record carries its problem inline); `file_name` names it in
/// errors and tracebacks. With `device` >= 0 the problem is read on that CUDA device (drawn and run there,
/// its memory given back to the device after): today's KernelBench inputs take minutes on the CPU.
expected<task_spec> kernelbench_task_from_source(const std::string& file_name, const std::string& source,
                                                 const std::string& name, int device = -1);

/// Starts the interpreter and imports what every KernelBench evaluation imports before a module runs
/// (torch, and torch._dynamo and Triton where they exist, which rebind torch's functions on import): a
/// worker started ahead of its request pays it there, not in the evaluation. What a module's evaluation then
/// finds is the same interpreter state it would have built itself.
status warm_kernelbench_python();

/// The reference of a task whose module is set, on the CPU (device < 0) or a CUDA device. Input values:
/// `nominal` is get_inputs() under torch.manual_seed(seed); `heavy_tailed` multiplies each floating input by
/// 1 + |t| (t Student-t with 2 degrees of freedom, clipped to 1e3, drawn from the seed), so signs and zeros
/// stay where the module's generators put them while magnitudes spread over three decades. Not thread-safe
/// (Python's one thread).
class kernelbench_reference final : public reference_model {
 public:
  /// Builds task.module's Model under kernelbench_model_seed on `device` (< 0: the CPU); its output
  /// described by one forward pass.
  static expected<std::unique_ptr<kernelbench_reference>> create(const task_spec& task, int device = -1);
  ~kernelbench_reference() override;

  const std::vector<int64_t>& output_shape() const override;
  const std::string& output_dtype() const override;
  host_tensor make_output() const override;
  /// Views on the device the reference was built for (std::invalid_argument otherwise, or when a view does
  /// not match). Values are drawn on the CPU by get_inputs(), the same on either device.
  void fill_inputs(const std::vector<cru_tensor>& dst, uint64_t seed, input_variant variant,
                   int device) const override;
  /// std::runtime_error with Python's message when forward() raises. On CUDA, on the current stream.
  void run_views(const std::vector<cru_tensor>& inputs, const cru_tensor* out, int device) const override;
  /// The bytes the forward pass that described the output had to move (kernelbench_cost.hpp), traced
  /// when the reference was built, before any candidate shared its interpreter; its basis says what counted.
  task_cost minimum_cost() const override;
  /// Why fresh inputs are drawn on the CPU now (kernelbench_module::draws_moved), empty when they are not.
  std::string draws_moved() const;

  /// The model under torch.compile in `mode` ("default", "reduce-overhead"), compiled now: three calls on
  /// the inputs of seed 0, the last output checked against eager's within the task's tolerances. Empty, or
  /// why that form is not available (torch.compile needs PyTorch 2; Inductor's error; another output). Call
  /// before watch(): compiling imports and patches parts of torch, which must not count as a candidate's.
  std::string compile(const std::string& mode);
  /// The form compile(mode) made, on views, as run_views (std::logic_error when it made none).
  void run_compiled(const std::string& mode, const std::vector<cru_tensor>& inputs, const cru_tensor* out,
                    int device) const;

  /// Takes the fingerprint of what forward() computes with, before a candidate runs in this interpreter:
  /// the functions and modules bound in torch's namespaces (torch.*, torch.Tensor, the classes of the
  /// model's modules), the problem module's globals, the model's submodules and parameters (their identity;
  /// their values kept as copies Python cannot reach). Empty, or why it could not be taken.
  std::string watch();
  /// What changed since watch() ("torch.nn.functional.relu rebound; parameter 'weight' values changed"),
  /// empty when nothing did or watch() was never called. Keys added since are not changes.
  std::string changes() const;

 private:
  struct impl;
  explicit kernelbench_reference(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::kernels
