#pragma once
// The tensors of a KernelBench module (kernelbench_module.hpp), as LibTorch sees them: the Python tensors
// themselves, no copies. Includes LibTorch: include only from .cpp files.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "kernels/abi/crucible_abi.h"
#include "kernels/python/kernelbench_module.hpp"

namespace crucible::kernels {

/// A tensor over an ABI view's memory (its shape, strides and dtype), no copy: host memory when device < 0,
/// else memory of that CUDA device.
at::Tensor tensor_of_view(const cru_tensor& v, int device = -1);
/// "float32 [4, 64]".
std::string describe(const at::Tensor& t);

/// get_inputs() under torch.manual_seed(seed), on the module's device (`problem`'s get_inputs when given).
/// An error for an input that is not a tensor.
expected<std::vector<at::Tensor>> kernelbench_inputs(kernelbench_module& m, uint64_t seed,
                                                     const kernelbench_module* problem = nullptr);

/// The model's forward pass on `inputs` (no autograd), with oneDNN off (its JIT needs executable memory,
/// which the candidate's sandbox refuses; the reference runs the same way); an error when it raises or
/// returns no tensor. A tensor subclass that claims a shape its storage does not hold is an error too, and
/// sets `*disguised` (when given): evidence of deferred work dressed as the output, not a wrong answer.
expected<at::Tensor> kernelbench_forward(kernelbench_module& m, const std::vector<at::Tensor>& inputs,
                                         bool* disguised = nullptr);

}  // namespace crucible::kernels
