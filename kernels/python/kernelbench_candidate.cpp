#include "kernels/python/kernelbench_candidate.hpp"

#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "kernels/python/kernelbench_module.hpp"
#include "kernels/python/kernelbench_module_impl.hpp"
#include "kernels/python/kernelbench_reference.hpp"
#include "kernels/python/kernelbench_tensors.hpp"

namespace py = pybind11;

namespace crucible::kernels {

namespace {

// torch's process-wide backend flags, read and written as Python sees them (their C++ accessors differ from
// one LibTorch to the next). Writing allow_tf32 moves the float32 matmul precision, so that comes last.
constexpr const char* flags_source = R"PY(
import warnings, torch
_names = ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
          "torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic", "torch.backends.cudnn.enabled",
          "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
          "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction")

def _owner(name):
    parts = name.split(".")
    o = torch
    for p in parts[1:-1]:
        o = getattr(o, p)
    return o, parts[-1]

def read():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = []
        for n in _names:
            o, a = _owner(n)
            try:  # a flag this PyTorch lacks (1.13's matmul object asserts rather than raise AttributeError)
                out.append(getattr(o, a))
            except Exception:
                out.append(None)
        out.append(torch.get_float32_matmul_precision())
        return tuple(out)

def write(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, v in zip(_names, values):
            if v is not None:
                o, a = _owner(n)
                setattr(o, a, v)
        torch.set_float32_matmul_precision(values[-1])

def differ(mine, theirs):
    names = _names + ("torch.get_float32_matmul_precision()",)
    return ", ".join("%s=%r" % (n, b) for n, a, b in zip(names, mine, theirs) if a != b)
)PY";

py::object flags_module() {
  return helper_module("crucible_flags", flags_source);
}

}  // namespace

// Hidden: it holds pybind11 objects, whose types are.
struct __attribute__((visibility("hidden"))) kernelbench_candidate::impl {
  std::unique_ptr<kernelbench_module> problem, module;
  int device = 0;
  py::object worker_flags, own_flags, write;
  std::string disguise;  ///< the last disguised output's message, until taken
};

kernelbench_candidate::kernelbench_candidate(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
kernelbench_candidate::~kernelbench_candidate() = default;

expected<std::unique_ptr<kernelbench_candidate>> kernelbench_candidate::load(const std::string& path,
                                                                             const task_spec& task,
                                                                             int device) {
  auto problem = kernelbench_module::from_source(task.name + ".py", task.module);
  if (!problem) return problem.err();
  auto p = std::make_unique<impl>();
  p->device = device;
  try {
    p->write = flags_module().attr("write");
    p->worker_flags = flags_module().attr("read")();
  } catch (const std::exception& e) {
    return make_error(std::string("torch's backend flags cannot be read: ") + e.what());
  }
  p->problem = std::make_unique<kernelbench_module>(std::move(*problem));
  auto m = kernelbench_module::load(path, "ModelNew");
  if (!m) return m.err();
  if (auto st = m->instantiate(kernelbench_model_seed, torch_device(device), p->problem.get()); !st)
    return st.err();
  p->module = std::make_unique<kernelbench_module>(std::move(*m));
  if (auto xs = kernelbench_inputs(*p->module, 0, p->problem.get()); xs)
    (void)kernelbench_forward(*p->module, *xs);
  try {
    p->own_flags = flags_module().attr("read")();
    p->write(p->worker_flags);
  } catch (const std::exception& e) {
    return make_error(std::string("torch's backend flags cannot be restored: ") + e.what());
  }
  return std::unique_ptr<kernelbench_candidate>(new kernelbench_candidate(std::move(p)));
}

void kernelbench_candidate::enter() {
  impl_->write(impl_->own_flags);
}

void kernelbench_candidate::leave() {
  impl_->write(impl_->worker_flags);
}

int kernelbench_candidate::call(const cru_tensor* in, int32_t n, cru_tensor* out) {
  auto& p = *impl_;
  std::vector<at::Tensor> xs;
  xs.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) xs.push_back(tensor_of_view(in[i], p.device));
  bool disguised = false;
  auto y = kernelbench_forward(*p.module, xs, &disguised);
  if (!y) {
    if (disguised) p.disguise = y.message();
    throw std::runtime_error(y.message());
  }
  at::Tensor o = tensor_of_view(*out, p.device);
  if (y->sizes() != o.sizes() || y->scalar_type() != o.scalar_type())
    throw std::runtime_error("ModelNew returned " + describe(*y) + ", the reference " + describe(o));
  if (!y->is_cuda() || y->get_device() != p.device)
    throw std::runtime_error("ModelNew returned a tensor on " + y->device().str() + ", not on the task's " +
                             o.device().str());
  o.copy_(*y);
  return 0;
}

std::string kernelbench_candidate::take_disguise() {
  return std::exchange(impl_->disguise, {});
}

std::string kernelbench_candidate::own_flags() const {
  try {
    return flags_module().attr("differ")(impl_->worker_flags, impl_->own_flags).cast<std::string>();
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace crucible::kernels
