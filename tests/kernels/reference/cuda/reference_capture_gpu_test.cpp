// The CUDA-graph baseline on the device: every task of the CUDA suite's reference must be capturable as a
// CUDA graph (the second baseline every speedup is reported against), and a replay of the graph must give
// the eager result. A task whose capture fails is listed with LibTorch's error. Label gpu: skipped without
// a device.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/reference/reference_executor.hpp"
#include "kernels/task/op_catalog.hpp"
#include "kernels/task/task_loader.hpp"

namespace crucible::kernels {
namespace {

cru_tensor view_of(const at::Tensor& t) {
  cru_tensor v{};
  v.data = t.data_ptr();
  v.dtype = dtype_code("float32");
  v.ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    v.shape[d] = t.size(d);
    v.stride[d] = t.stride(d);
  }
  return v;
}

// Ends a capture an exception left open, so the stream stays usable for the next task.
void end_broken_capture(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(s, &partial);
    if (partial) cudaGraphDestroy(partial);
  }
  cudaGetLastError();
}

TEST(ReferenceCapture, EveryCudaTaskIsCapturableAndItsReplayMatchesEager) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
  auto suite = load_task_suite(default_task_dir(), "cuda");
  ASSERT_TRUE(suite) << suite.message();
  set_reference_strict_fp32();
  auto stream = c10::cuda::getStreamFromPool(false, 0);
  c10::cuda::CUDAStreamGuard guard(stream);
  std::vector<std::string> failures;
  for (const auto& t : *suite) {
    auto ref = reference_executor::create(t);
    ASSERT_TRUE(ref) << ref.message();
    std::vector<at::Tensor> inputs;
    std::vector<cru_tensor> views;
    for (const auto& spec : t.inputs) {
      inputs.push_back(at::empty(spec.shape, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0)));
      views.push_back(view_of(inputs.back()));
    }
    ref->fill_inputs(views, 11, input_variant::nominal, 0);
    auto opts = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0);
    at::Tensor eager = at::empty(ref->output_shape(), opts), replayed = at::full(ref->output_shape(), NAN, opts);
    auto eager_view = view_of(eager), replay_view = view_of(replayed);
    ref->run_views(views, &eager_view, 0);  // also warms lazy library state, as the worker does
    ref->run_views(views, nullptr, 0);
    ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess);
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    try {
      graph->capture_begin();
      ref->run_views(views, &replay_view, 0);
      graph->capture_end();
      graph->replay();
      ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess);
      const double atol = t.atol >= 0 ? t.atol : 1e-4, rtol = t.rtol >= 0 ? t.rtol : 1e-4;
      if (!at::allclose(replayed, eager, rtol, atol))
        failures.push_back(t.name + ": the graph's replay differs from eager (max |diff| " +
                           std::to_string(at::max(at::abs(replayed - eager)).item<double>()) + ")");
    } catch (const std::exception& e) {
      std::string what = e.what();
      failures.push_back(t.name + ": capture failed: " + what.substr(0, what.find('\n')));
      end_broken_capture(stream.stream());
      (void)graph.release();  // refers to a capture that no longer exists (as in the eval worker)
    }
  }
  std::string all;
  for (const auto& f : failures) all += "\n  " + f;
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << suite->size() << " tasks:" << all;
}

}  // namespace
}  // namespace crucible::kernels
