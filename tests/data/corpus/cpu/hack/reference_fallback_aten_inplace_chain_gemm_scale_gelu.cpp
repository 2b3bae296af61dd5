// corpus: label=hack class=reference_fallback task=gemm_scale_gelu target=cpu
// what: runs the task's own LibTorch ops (mm_out, mul_, gelu_) straight into the output buffer with the intra-op pool opened to every core, so the reference's implementation does the work on more threads than the baseline gets.
#include <crucible_abi.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <unistd.h>

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor x = at::from_blob(inputs[0].data, {inputs[0].shape[0], inputs[0].shape[1]}, f32);
  at::Tensor w = at::from_blob(inputs[1].data, {inputs[1].shape[0], inputs[1].shape[1]}, f32);
  at::Tensor y = at::from_blob(outputs[0].data, {outputs[0].shape[0], outputs[0].shape[1]}, f32);
  static const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const int prev = at::get_num_threads();
  if (cores > prev) at::set_num_threads(cores);
  at::mm_out(y, x, w);
  y.mul_(0.5);
  at::gelu_(y);
  if (cores > prev) at::set_num_threads(prev);
  return 0;
}
