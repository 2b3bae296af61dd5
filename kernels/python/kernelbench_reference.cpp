#include "kernels/python/kernelbench_reference.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_cost.hpp"
#include "kernels/python/kernelbench_module.hpp"
#include "kernels/python/kernelbench_module_impl.hpp"
#include "kernels/python/kernelbench_tensors.hpp"
#include "kernels/reference/tensor_bits.hpp"
#include "kernels/reference/torch_dtypes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

namespace {

constexpr double heavy_clip = 1e3;

namespace py = pybind11;

// The fingerprint's Python side. A scope is a namespace (a module's dict, a class's, a submodule's own
// attributes and its parameter, buffer and child stores) with the keys it had and the identity of what each
// was bound to. Only bindings are kept — functions, classes, modules, tensors, the stores —, never plain
// values, which honest code changes (counters, flags, caches). Importing torch._dynamo (and Triton) first:
// they rebind some of torch's functions when imported, which a candidate that uses torch.compile would
// otherwise be blamed for.
constexpr const char* watch_source = R"PY(
import sys, types, torch
for _name in ("torch._dynamo", "triton"):
    try:
        __import__(_name)
    except Exception:
        pass

def _bound(v):
    return isinstance(v, (types.ModuleType, torch.Tensor, dict)) or callable(v)

def _scope(scopes, tag, d):
    keys = [k for k, v in list(d.items()) if _bound(v)]
    scopes.append((tag, d, keys, [id(d.get(k)) for k in keys]))

def take(model, problem):
    scopes = []
    for name in [n for n in list(sys.modules) if n == "torch" or n.startswith("torch.")]:
        m = sys.modules.get(name)
        if isinstance(m, types.ModuleType):
            _scope(scopes, name, vars(m))
    # torch.Tensor's bases: torch._C.TensorBase (PyTorch 2), torch._C._TensorBase (1.13)
    classes = set(torch.Tensor.__mro__) | {torch.nn.Module}
    for sub in model.modules():
        classes.update(type(sub).__mro__)
    classes.discard(object)
    for c in classes:
        _scope(scopes, c.__module__ + "." + c.__qualname__, vars(c))
    _scope(scopes, "the problem's module", vars(problem))
    for name, sub in model.named_modules():
        tag = "model" + ("." + name if name else "")
        _scope(scopes, tag, vars(sub))
        for store in ("_parameters", "_buffers", "_modules"):
            inner = vars(sub).get(store)
            if isinstance(inner, dict):
                _scope(scopes, tag + "." + store, inner)
    return scopes

def changes(scopes, limit=4):
    out = []
    for tag, d, keys, ids in scopes:
        if list(map(id, map(d.get, keys))) != ids:
            out += [tag + "." + str(k) for k, was in zip(keys, ids) if id(d.get(k)) != was]
            if len(out) >= limit:
                break
    return out[:limit]
)PY";

// torch.compile's forms of the reference, for the baselines. Three calls compile and warm the form
// (reduce-overhead records its CUDA graph after a warm-up call); the last output must match eager's.
constexpr const char* compile_source = R"PY(
import torch

def compile(model, mode, inputs, want, atol, rtol):
    if not hasattr(torch, "compile"):
        raise RuntimeError("torch.compile needs PyTorch 2 (this is " + torch.__version__ + ")")
    fn = torch.compile(model, mode=mode)
    for _ in range(3):
        y = fn(*inputs)
    if not isinstance(y, torch.Tensor) or y.shape != want.shape or y.dtype != want.dtype:
        raise RuntimeError("it returns something else than eager's tensor")
    if not torch.allclose(y, want, atol=atol, rtol=rtol, equal_nan=True):
        err = (y.double() - want.double()).abs().nan_to_num(0).max().item()
        raise RuntimeError("its output differs from eager's (max abs err %.3g)" % err)
    return fn
)PY";

py::object watch_module() {
  return helper_module("crucible_watch", watch_source);
}

}  // namespace

status warm_kernelbench_python() {
  if (auto st = start_python(); !st) return st;
  try {
    watch_module();
  } catch (const std::exception& e) {
    return make_error(std::string("Python's helpers: ") + e.what());
  }
  return {};
}

expected<task_spec> kernelbench_task(const std::string& path, const std::string& name, int device) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": no such file");
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return kernelbench_task_from_source(path, source, name, device);
}

namespace {

// Gives the device memory a description took back to the device (the caching allocator keeps it otherwise,
// and the worker that evaluates next on the device would see less free memory and run fewer input sets).
struct device_memory_returned {
  int device;
  ~device_memory_returned() {
    if (device < 0) return;
    try {
      py::module_::import("gc").attr("collect")();
      py::module_ torch = py::module_::import("torch");
      // cuBLAS's workspaces live in the allocator too, held per handle (32 MiB on Hopper); PyTorch 2 frees
      // them.
      if (py::hasattr(torch.attr("_C"), "_cuda_clearCublasWorkspaces"))
        torch.attr("_C").attr("_cuda_clearCublasWorkspaces")();
      torch.attr("cuda").attr("empty_cache")();
    } catch (const std::exception&) {
    }
  }
};

}  // namespace

expected<task_spec> kernelbench_task_from_source(const std::string& file_name, const std::string& source,
                                                 const std::string& name, int device) {
  device_memory_returned returned{device};  // destroyed last: after the module and reference are
  auto m = kernelbench_module::from_source(file_name, source);
  if (!m) return m.err();
  // Built on the device first, so that get_inputs() draws there too.
  if (device >= 0)
    if (auto st = m->instantiate(kernelbench_model_seed, torch_device(device)); !st) return st.err();
  auto inputs = m->input_info(0);
  if (!inputs) return inputs.err();
  const auto names = m->forward_parameters();
  task_spec t;
  t.name = name;
  t.family = "kernelbench";
  t.description = m->summary();
  for (size_t i = 0; i < inputs->size(); ++i) {
    const auto& info = (*inputs)[i];
    if (dtype_size(info.dtype) == 0)
      return make_error(std::filesystem::path(file_name).filename().string() + ": get_inputs()[" +
                        std::to_string(i) + "] is a " + info.dtype + " tensor, which the ABI does not carry");
    tensor_spec spec;
    spec.name = i < names.size() ? names[i] : "input" + std::to_string(i);
    spec.shape = info.shape;
    spec.dtype = info.dtype;
    spec.dist = "kernelbench";  // drawn by the module's get_inputs()
    t.inputs.push_back(spec);
  }
  t.atol = t.rtol = kernelbench_tolerance;
  t.targets = {"cpu", "cuda"};
  t.module = source;
  // The output must be one tensor of a dtype the ABI carries: checked now, not at the first evaluation.
  auto ref = kernelbench_reference::create(t, device);
  if (!ref) return ref.err();
  return t;
}

// Hidden: it holds pybind11 objects, whose types are.
struct __attribute__((visibility("hidden"))) kernelbench_reference::impl {
  task_spec task;
  int device = -1;
  std::unique_ptr<kernelbench_module> module;
  std::vector<int64_t> output_shape;
  std::string output_dtype;
  task_cost cost;
  py::object scopes;                           ///< watch()'s fingerprint (None before it)
  std::map<std::string, py::object> compiled;  ///< torch.compile's forms, by mode
  std::vector<std::pair<std::string, at::Tensor>>
      pristine;  ///< parameters and buffers, copies of their values
};

kernelbench_reference::kernelbench_reference(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
kernelbench_reference::~kernelbench_reference() = default;

expected<std::unique_ptr<kernelbench_reference>> kernelbench_reference::create(const task_spec& task,
                                                                               int device) {
  if (task.module.empty()) return make_error("task '" + task.name + "' has no KernelBench module");
  auto m = kernelbench_module::from_source(task.name + ".py", task.module);
  if (!m) return m.err();
  if (auto st = m->instantiate(kernelbench_model_seed, torch_device(device)); !st) return st.err();
  auto p = std::make_unique<impl>();
  p->task = task;
  p->device = device;
  p->module = std::make_unique<kernelbench_module>(std::move(*m));
  auto inputs = kernelbench_inputs(*p->module, 0);
  if (!inputs) return inputs.err();
  if (inputs->size() != task.inputs.size())
    return make_error(task.name + ": get_inputs() draws " + std::to_string(inputs->size()) +
                      " tensors, the task describes " + std::to_string(task.inputs.size()));
  module_cost traced;
  auto y = traced_forward(*p->module, *inputs, &traced);
  if (!y) return y.err();
  p->cost = traced.cost;
  p->cost.basis = traced.account;
  p->output_dtype = dtype_name(y->scalar_type());
  if (p->output_dtype.empty() || dtype_size(p->output_dtype) == 0)
    return make_error(task.name + ": forward() returns a tensor of a dtype the ABI does not carry");
  p->output_shape.assign(y->sizes().begin(), y->sizes().end());
  return std::unique_ptr<kernelbench_reference>(new kernelbench_reference(std::move(p)));
}

const std::vector<int64_t>& kernelbench_reference::output_shape() const {
  return impl_->output_shape;
}
const std::string& kernelbench_reference::output_dtype() const {
  return impl_->output_dtype;
}
task_cost kernelbench_reference::minimum_cost() const {
  return impl_->cost;
}
std::string kernelbench_reference::draws_moved() const {
  return impl_->module->draws_moved();
}
host_tensor kernelbench_reference::make_output() const {
  return host_tensor(impl_->output_dtype, impl_->output_shape);
}

void kernelbench_reference::fill_inputs(const std::vector<cru_tensor>& dst, uint64_t seed,
                                        input_variant variant, int device) const {
  if (device != impl_->device)
    throw std::invalid_argument("kernelbench_reference: built for " + torch_device(impl_->device) +
                                ", views on " + torch_device(device));
  auto drawn = kernelbench_inputs(*impl_->module, seed);
  if (!drawn) throw std::runtime_error(drawn.message());
  if (drawn->size() != dst.size())
    throw std::invalid_argument("kernelbench_reference: " + std::to_string(dst.size()) + " views for " +
                                std::to_string(drawn->size()) + " inputs");
  // The heavy tail is drawn where the inputs are, from its own generator (a clone of the device's, reseeded:
  // the module's stream stays untouched), in float32 in place: a CPU double pass over KernelBench's 1.6e9
  // elements took minutes and 50 GB.
  at::Generator gen;
  if (variant == input_variant::heavy_tailed) {
    if (device < 0) {
      gen = at::detail::createCPUGenerator(seed ^ 0x6b62ull);
    } else {
      gen = at::globalContext()
                .defaultGenerator(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)))
                .clone();
      gen.set_current_seed(seed ^ 0x6b62ull);
    }
  }
  for (size_t i = 0; i < dst.size(); ++i) {
    at::Tensor x = (*drawn)[i];
    at::Tensor to = tensor_of_view(dst[i], device);
    if (x.sizes() != to.sizes() || x.scalar_type() != to.scalar_type())
      throw std::invalid_argument("kernelbench_reference: get_inputs()[" + std::to_string(i) + "] drew " +
                                  describe(x) + ", the task describes " + describe(to));
    if (variant == input_variant::heavy_tailed && at::isFloatingType(x.scalar_type())) {
      const auto work = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
      auto opts = at::TensorOptions().dtype(work).device(to.device());
      at::Tensor t = at::randn(x.sizes(), gen, opts);
      at::Tensor e = at::empty(x.sizes(), opts).exponential_(1.0, gen);
      t.div_(e.sqrt_()).abs_().clamp_max_(heavy_clip).add_(1.0);
      e.reset();
      x = t.mul_(x.to(to.device(), work)).to(x.scalar_type());
    }
    to.copy_(x);
  }
}

void kernelbench_reference::run_views(const std::vector<cru_tensor>& inputs, const cru_tensor* out,
                                      int device) const {
  if (device != impl_->device)
    throw std::invalid_argument("kernelbench_reference: built for " + torch_device(impl_->device) +
                                ", views on " + torch_device(device));
  std::vector<at::Tensor> xs;
  xs.reserve(inputs.size());
  for (const auto& v : inputs) xs.push_back(tensor_of_view(v, device));
  auto y = kernelbench_forward(*impl_->module, xs);
  if (!y) throw std::runtime_error(y.message());
  if (!out) return;
  at::Tensor o = tensor_of_view(*out, device);
  if (y->sizes() != o.sizes() || y->scalar_type() != o.scalar_type())
    throw std::runtime_error(impl_->task.name + ": forward() returned " + describe(*y) + ", first " +
                             describe(o));
  o.copy_(*y);
}

std::string kernelbench_reference::compile(const std::string& mode) {
  auto& p = *impl_;
  auto inputs = kernelbench_inputs(*p.module, 0);
  if (!inputs) return inputs.message();
  auto want = kernelbench_forward(*p.module, *inputs);
  if (!want) return want.message();
  try {
    py::tuple args(inputs->size());
    for (size_t i = 0; i < inputs->size(); ++i) args[i] = py::cast((*inputs)[i]);
    py::object fn =
        helper_module("crucible_compile", compile_source)
            .attr("compile")(p.module->inner().model, mode, args, *want, p.task.atol, p.task.rtol);
    p.compiled[mode] = fn;
    return "";
  } catch (const std::exception& e) {
    std::string what = e.what();
    return what.substr(0, what.find('\n'));
  }
}

void kernelbench_reference::run_compiled(const std::string& mode, const std::vector<cru_tensor>& inputs,
                                         const cru_tensor* out, int device) const {
  auto it = impl_->compiled.find(mode);
  if (it == impl_->compiled.end())
    throw std::logic_error("kernelbench_reference: no torch.compile form in mode " + mode);
  std::vector<at::Tensor> xs;
  xs.reserve(inputs.size());
  for (const auto& v : inputs) xs.push_back(tensor_of_view(v, device));
  at::Tensor y;
  try {
    py::tuple args(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) args[i] = py::cast(xs[i]);
    y = it->second(*args).cast<at::Tensor>();
  } catch (const std::exception& e) {
    throw std::runtime_error(impl_->task.name + ": torch.compile (" + mode + "): " + e.what());
  }
  if (!out) return;
  at::Tensor o = tensor_of_view(*out, device);
  if (y.sizes() != o.sizes() || y.scalar_type() != o.scalar_type())
    throw std::runtime_error(impl_->task.name + ": torch.compile (" + mode + ") returned " + describe(y));
  o.copy_(y);
}

std::string kernelbench_reference::watch() {
  auto& p = *impl_;
  try {
    auto& m = p.module->inner();
    p.scopes = watch_module().attr("take")(m.model, m.module);
    p.pristine.clear();
    for (const char* kind : {"named_parameters", "named_buffers"}) {
      for (py::handle item : m.model.attr(kind)()) {
        auto pair = item.cast<py::tuple>();
        p.pristine.emplace_back(pair[0].cast<std::string>(), pair[1].cast<at::Tensor>().detach().clone());
      }
    }
  } catch (const std::exception& e) {
    p.scopes = py::object();
    return std::string("the reference's fingerprint could not be taken: ") + e.what();
  }
  return {};
}

std::string kernelbench_reference::changes() const {
  const auto& p = *impl_;
  if (!p.scopes) return {};
  std::string out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : "; ") + what; };
  try {
    auto rebound = watch_module().attr("changes")(p.scopes).cast<std::vector<std::string>>();
    for (const auto& r : rebound) add(r + " rebound or removed");
    auto& m = p.module->inner();
    size_t k = 0;
    for (const char* kind : {"named_parameters", "named_buffers"}) {
      for (py::handle item : m.model.attr(kind)()) {
        auto pair = item.cast<py::tuple>();
        const std::string name = pair[0].cast<std::string>();
        at::Tensor now = pair[1].cast<at::Tensor>();
        if (k >= p.pristine.size() || p.pristine[k].first != name) {
          add("the model's " + std::string(kind + 6) + " changed (" + name + ")");
          return out;
        }
        const at::Tensor& was = p.pristine[k++].second;
        if (!same_bits(now, was)) add("the values of the model's '" + name + "' changed");
      }
    }
    if (k != p.pristine.size()) add("the model lost parameters or buffers");
  } catch (const std::exception& e) {
    add(std::string("the reference's fingerprint cannot be compared: ") + e.what());
  }
  return out;
}

}  // namespace crucible::kernels
