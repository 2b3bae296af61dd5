#pragma once
// One KernelBench file — a problem (`Model`, `get_inputs()`, `get_init_inputs()`) or a solution
// (`ModelNew`, the problem's inputs) — executed as a Python module of its own in the embedded interpreter
// (embedded_python.hpp). Its model is built under a seed and its inputs drawn by its own generators under a
// seed, so a trial's values are reproducible and fresh per seed. The tensors themselves:
// kernelbench_tensors.hpp. Python errors come back as errors naming the file, with Python's message.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::kernels {

struct tensor_info {
  std::string dtype;  ///< torch's name: float32, float16, int64, ...
  std::vector<int64_t> shape;
};

/// "float32 [16, 32]".
std::string describe(const tensor_info& t);

/// Thread contract: the thread that started Python, one call at a time.
class kernelbench_module {
 public:
  /// Executes `path` and finds `class_name` (Model for a problem, ModelNew for a solution), get_inputs and
  /// get_init_inputs (a solution may lack them: instantiate() then takes its problem's).
  static expected<kernelbench_module> load(const std::string& path, const std::string& class_name = "Model");
  /// The same from the file's text (`path` names it in errors and tracebacks).
  static expected<kernelbench_module> from_source(const std::string& path, const std::string& source,
                                                  const std::string& class_name = "Model");
  kernelbench_module(kernelbench_module&&) noexcept;
  kernelbench_module& operator=(kernelbench_module&&) noexcept;
  ~kernelbench_module();

  /// Builds the model in eval mode on `device` ("cpu", "cuda", "cuda:1"): torch.manual_seed(seed), then
  /// class(*get_init_inputs()) — `problem`'s get_init_inputs when given (a solution built like its problem).
  status instantiate(uint64_t seed, const std::string& device, const kernelbench_module* problem = nullptr);
  bool instantiated() const;

  /// The inputs get_inputs() draws under `seed`, described (`problem`'s get_inputs when given).
  expected<std::vector<tensor_info>> input_info(uint64_t seed, const kernelbench_module* problem = nullptr);
  /// The forward pass's output on the inputs of `seed`.
  expected<tensor_info> output_info(uint64_t seed);
  /// The median of `runs` forward passes on the inputs of `seed` after `warmup` passes, in ms, each call
  /// synchronized on CUDA (the listing's eager time; evaluations use the timing protocol instead).
  expected<double> eager_ms(uint64_t seed, int warmup, int runs);

  /// The names of forward()'s parameters after self (empty for *args); the first line of the class's
  /// docstring (empty when it has none).
  std::vector<std::string> forward_parameters() const;
  std::string summary() const;

  const std::string& path() const;
  const std::string& device() const;
  /// Why get_inputs() draws on the CPU after drawing on the device (the error it raised there; from then
  /// on, for good), empty while it draws on the device or never did.
  const std::string& draws_moved() const;

  struct impl;
  impl& inner() { return *impl_; }

 private:
  explicit kernelbench_module(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace crucible::kernels
