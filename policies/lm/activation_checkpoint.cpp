#include "policies/lm/activation_checkpoint.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace crucible::policies {
namespace {

// The CUDA autocast switches: LibTorch 2.4 made them per device type (set_autocast_dtype(at::kCUDA, ..));
// earlier releases, 1.13 among them, name the CUDA ones alone (set_autocast_gpu_dtype).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled() {
  return at::autocast::is_autocast_enabled(at::kCUDA);
}
void set_autocast_enabled(bool on) {
  at::autocast::set_autocast_enabled(at::kCUDA, on);
}
at::ScalarType autocast_dtype() {
  return at::autocast::get_autocast_dtype(at::kCUDA);
}
void set_autocast_dtype(at::ScalarType t) {
  at::autocast::set_autocast_dtype(at::kCUDA, t);
}
#else
bool autocast_enabled() {
  return at::autocast::is_enabled();
}
void set_autocast_enabled(bool on) {
  at::autocast::set_enabled(on);
}
at::ScalarType autocast_dtype() {
  return at::autocast::get_autocast_gpu_dtype();
}
void set_autocast_dtype(at::ScalarType t) {
  at::autocast::set_autocast_gpu_dtype(t);
}
#endif

// What the backward pass needs to run the function again: the function and the autocast state it ran under.
// A capsule is the one way to keep a C++ object in an autograd context's saved_data.
struct recompute : torch::CustomClassHolder {
  std::function<torch::Tensor(const torch::Tensor&)> fn;
  bool autocast = false;
  at::ScalarType dtype = at::kBFloat16;
};

struct checkpoint_function : torch::autograd::Function<checkpoint_function> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               c10::intrusive_ptr<recompute> r) {
    ctx->save_for_backward({x});
    ctx->saved_data["recompute"] = c10::IValue::make_capsule(std::move(r));
    torch::NoGradGuard no_grad;
    auto* held = static_cast<recompute*>(ctx->saved_data["recompute"].toCapsule().get());
    return held->fn(x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (grads.empty() || !grads[0].defined()) return {torch::Tensor(), torch::Tensor()};
    auto held = ctx->saved_data["recompute"].toCapsule();
    const auto& r = *static_cast<recompute*>(held.get());
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode grad_on(true);
      cuda_autocast_guard precision(r.autocast, r.dtype);
      y = r.fn(x);
    }
    torch::autograd::backward({y}, {grads[0]});
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed(std::function<torch::Tensor(const torch::Tensor&)> fn, const torch::Tensor& x) {
  auto r = c10::make_intrusive<recompute>();
  r->fn = std::move(fn);
  r->autocast = autocast_enabled();
  r->dtype = autocast_dtype();
  if (!torch::GradMode::is_enabled()) return r->fn(x);  // no backward will come: nothing to recompute
  // The node exists only when an input needs a gradient; the parameters `fn` reads are no inputs of it, so
  // an input that needs none (a frozen embedding's output) is stood in for by one that does.
  return checkpoint_function::apply(x.requires_grad() ? x : x.detach().requires_grad_(true), std::move(r));
}

cuda_autocast_guard::cuda_autocast_guard(bool enabled, at::ScalarType dtype)
    : enabled_(enabled), prev_enabled_(autocast_enabled()), prev_dtype_(autocast_dtype()) {
  if (enabled_) {
    at::autocast::increment_nesting();
    set_autocast_dtype(dtype);
  }
  set_autocast_enabled(enabled_);
}

cuda_autocast_guard::~cuda_autocast_guard() {
  if (enabled_ && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(prev_enabled_);
  set_autocast_dtype(prev_dtype_);
}

bool cuda_autocast_guard::enabled_now() {
  return autocast_enabled();
}

at::ScalarType cuda_autocast_guard::dtype_now() {
  return autocast_dtype();
}

}  // namespace crucible::policies
