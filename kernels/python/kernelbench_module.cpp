#include "kernels/python/kernelbench_module.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <ATen/Context.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include "kernels/python/embedded_python.hpp"
#include "kernels/python/kernelbench_module_impl.hpp"
#include "kernels/python/kernelbench_tensors.hpp"
#include "kernels/reference/torch_dtypes.hpp"

namespace py = pybind11;

namespace crucible::kernels {

namespace {

std::string python_error(const std::string& path, const std::exception& e) {
  return std::filesystem::path(path).filename().string() + ": " + e.what();
}

py::object attribute(const py::object& module, const char* name) {
  if (!py::hasattr(module, name)) return py::none();
  return module.attr(name);
}

py::object torch_module() {
  return py::module_::import("torch");
}

// torch.manual_seed(seed) then fn(): what the module's generators draw is reproducible in the seed.
py::object seeded_call(const py::object& fn, uint64_t seed) {
  torch_module().attr("manual_seed")(seed & 0x7fffffffffffffffull);
  return fn();
}

// seeded_call under the device's factory context when `on_device` and PyTorch has one:
// what the module's generators draw is reproducible in the seed (and in where they draw).
constexpr const char* draw_source = R"PY(
import torch
def draw(fn, seed, device, on_device):
    torch.manual_seed(seed)
    if not on_device or device == "cpu" or not hasattr(torch.device, "__enter__"):
        return fn(), False, ""
    try:
        with torch.device(device):
            return fn(), True, ""
    except Exception as e:
        torch.manual_seed(seed)
        return fn(), False, "%s: %s" % (type(e).__name__, str(e).split("\n")[0])
)PY";

py::object seeded_draw(const py::object& fn, uint64_t seed, const std::string& device, bool& on_device,
                       std::string& why_not) {
  py::tuple r = helper_module("crucible_draw", draw_source)
                    .attr("draw")(fn, seed & 0x7fffffffffffffffull, device, on_device);
  if (on_device && !r[1].cast<bool>()) why_not = r[2].cast<std::string>();
  on_device = r[1].cast<bool>();
  return r[0];
}

}  // namespace

std::string describe(const tensor_info& t) {
  std::string s = t.dtype + " [";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

kernelbench_module::kernelbench_module(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
kernelbench_module::kernelbench_module(kernelbench_module&&) noexcept = default;
kernelbench_module& kernelbench_module::operator=(kernelbench_module&&) noexcept = default;
kernelbench_module::~kernelbench_module() = default;

const std::string& kernelbench_module::path() const {
  return impl_->path;
}
const std::string& kernelbench_module::device() const {
  return impl_->device;
}
const std::string& kernelbench_module::draws_moved() const {
  return impl_->draws_moved;
}
std::vector<std::string> kernelbench_module::forward_parameters() const {
  try {
    static const char* names_of =
        "lambda cls: [p.name for p in __import__('inspect').signature(cls.forward).parameters.values()"
        " if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]";
    py::object fn = py::module_::import("builtins").attr("eval")(names_of, py::dict());
    return fn(impl_->cls).cast<std::vector<std::string>>();
  } catch (const std::exception&) {
    return {};
  }
}

std::string kernelbench_module::summary() const {
  try {
    py::object doc = impl_->cls.attr("__doc__");
    if (doc.is_none()) return {};
    std::string text = py::str(doc).cast<std::string>();
    const size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) return {};
    const size_t end = text.find('\n', start);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  } catch (const std::exception&) {
    return {};
  }
}

bool kernelbench_module::instantiated() const {
  return impl_->model && !impl_->model.is_none();
}

expected<kernelbench_module> kernelbench_module::load(const std::string& path,
                                                      const std::string& class_name) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return make_error(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return make_error(path + ": cannot be read");
  return from_source(path, source, class_name);
}

expected<kernelbench_module> kernelbench_module::from_source(const std::string& path,
                                                             const std::string& source,
                                                             const std::string& class_name) {
  if (auto st = start_python(); !st) return st.err();
  static int loaded = 0;  // each file a module of its own name, so two files never share globals
  auto m = std::make_unique<impl>();
  m->path = path;
  m->class_name = class_name;
  try {
    const std::string name = "crucible_kernelbench_" + std::to_string(loaded++);
    m->module = py::module_::import("types").attr("ModuleType")(name);
    m->module.attr("__file__") = path;
    py::module_::import("sys").attr("modules")[py::str(name)] = m->module;
    py::object code = py::module_::import("builtins").attr("compile")(py::bytes(source), path, "exec");
    py::module_::import("builtins").attr("exec")(code, m->module.attr("__dict__"));
  } catch (const std::exception& e) {
    return make_error(python_error(path, e));
  }
  m->cls = attribute(m->module, class_name.c_str());
  if (m->cls.is_none()) return make_error(python_error(path, std::runtime_error("no class " + class_name)));
  m->get_inputs = attribute(m->module, "get_inputs");
  m->get_init_inputs = attribute(m->module, "get_init_inputs");
  if (class_name == "Model" && (m->get_inputs.is_none() || m->get_init_inputs.is_none()))
    return make_error(
        python_error(path, std::runtime_error("a problem needs get_inputs() and get_init_inputs()")));
  m->model = py::none();
  return kernelbench_module(std::move(m));
}

status kernelbench_module::instantiate(uint64_t seed, const std::string& device,
                                       const kernelbench_module* problem) {
  auto& m = *impl_;
  const py::object& init = problem ? problem->impl_->get_init_inputs : m.get_init_inputs;
  if (init.is_none()) return make_error(python_error(m.path, std::runtime_error("no get_init_inputs()")));
  try {
    torch_module().attr("set_grad_enabled")(false);
    py::object args = seeded_call(init, seed);
    m.model = m.cls(*args);
    m.model = m.model.attr("to")(device).attr("eval")();
    m.device = device;
  } catch (const std::exception& e) {
    m.model = py::none();
    return make_error(python_error(m.path, e));
  }
  return {};
}

pybind11::object helper_module(const char* name, const char* source) {
  static std::map<std::string, py::object*> made;
  py::object*& m = made[name];
  if (!m) {
    py::object fresh = py::module_::import("types").attr("ModuleType")(name);
    py::exec(source, fresh.attr("__dict__"));
    m = new py::object(std::move(fresh));
  }
  return *m;
}

std::string torch_device(int device) {
  return device < 0 ? "cpu" : "cuda:" + std::to_string(device);
}

at::Tensor tensor_of_view(const cru_tensor& v, int device) {
  std::vector<int64_t> shape(v.shape, v.shape + v.ndim), stride(v.stride, v.stride + v.ndim);
  auto options = at::TensorOptions().dtype(scalar_type_of_code(v.dtype));
  if (device >= 0) options = options.device(at::kCUDA, static_cast<c10::DeviceIndex>(device));
  return at::from_blob(v.data, shape, stride, options);
}

std::string describe(const at::Tensor& t) {
  std::string s = dtype_name(t.scalar_type()) + " [";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

expected<std::vector<at::Tensor>> kernelbench_inputs(kernelbench_module& module, uint64_t seed,
                                                     const kernelbench_module* problem) {
  auto& m = module.inner();
  const py::object& fn =
      problem ? const_cast<kernelbench_module*>(problem)->inner().get_inputs : m.get_inputs;
  if (fn.is_none()) return make_error(python_error(m.path, std::runtime_error("no get_inputs()")));
  const std::string device = m.device.empty() ? "cpu" : m.device;
  std::vector<at::Tensor> out;
  try {
    py::list drawn(seeded_draw(fn, seed, device, m.draws_on_device, m.draws_moved));
    for (size_t i = 0; i < drawn.size(); ++i) {
      py::object x = drawn[i];
      if (!THPVariable_Check(x.ptr()))
        return make_error(python_error(
            m.path, std::runtime_error("get_inputs()[" + std::to_string(i) + "] is a " +
                                       py::str(x.get_type().attr("__name__")).cast<std::string>() +
                                       ", not a tensor")));
      out.push_back(x.attr("to")(device).cast<at::Tensor>());
    }
  } catch (const std::exception& e) {
    return make_error(python_error(m.path, e));
  }
  return out;
}

namespace {

// oneDNN builds its CPU kernels at run time (JIT: executable memory), which the candidate's sandbox refuses:
// an honest F.gelu failed there with "could not create a primitive". Every forward pass, the reference's
// and the candidate's alike, runs on ATen's own kernels, so both sides run the same code.
class without_onednn {
 public:
  without_onednn() : before_(at::globalContext().userEnabledMkldnn()) {
    at::globalContext().setUserEnabledMkldnn(false);
  }
  ~without_onednn() { at::globalContext().setUserEnabledMkldnn(before_); }

 private:
  bool before_;
};

}  // namespace

expected<at::Tensor> kernelbench_forward(kernelbench_module& module, const std::vector<at::Tensor>& inputs,
                                         bool* disguised) {
  auto& m = module.inner();
  if (!module.instantiated())
    return make_error(python_error(m.path, std::runtime_error("the model is not built")));
  without_onednn same_kernels_both_sides;
  try {
    py::tuple args(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) args[i] = py::cast(inputs[i]);
    py::object y = m.model(*args);
    if (!THPVariable_Check(y.ptr()))
      return make_error(python_error(
          m.path,
          std::runtime_error("forward() returned a " +
                             py::str(y.get_type().attr("__name__")).cast<std::string>() + ", not a tensor")));
    at::Tensor t = y.cast<at::Tensor>();
    // A tensor subclass may claim a shape its storage does not have (the values computed later, when its
    // own methods are read): what the call returned is its storage, and the claim is reported as such.
    if (!THPVariable_CheckExact(y.ptr())) {  // a C check: this runs in every timed call
      std::vector<int64_t> claimed;
      for (auto d : py::iter(y.attr("shape"))) claimed.push_back(d.cast<int64_t>());
      if (claimed != std::vector<int64_t>(t.sizes().begin(), t.sizes().end())) {
        std::string shape;
        for (size_t i = 0; i < claimed.size(); ++i) shape += (i ? ", " : "") + std::to_string(claimed[i]);
        if (disguised) *disguised = true;
        return make_error(python_error(
            m.path, std::runtime_error("forward() returned a " +
                                       py::str(y.get_type().attr("__name__")).cast<std::string>() +
                                       " that claims shape [" + shape + "] and holds " + describe(t) +
                                       ": an output whose storage is not what it says it is")));
      }
    }
    return t;
  } catch (const std::exception& e) {
    return make_error(python_error(m.path, e));
  }
}

namespace {

tensor_info info_of(const at::Tensor& t) {
  tensor_info i;
  i.dtype = py::str(py::cast(t).attr("dtype")).cast<std::string>();
  if (i.dtype.rfind("torch.", 0) == 0) i.dtype = i.dtype.substr(6);
  i.shape.assign(t.sizes().begin(), t.sizes().end());
  return i;
}

}  // namespace

expected<std::vector<tensor_info>> kernelbench_module::input_info(uint64_t seed,
                                                                  const kernelbench_module* problem) {
  auto inputs = kernelbench_inputs(*this, seed, problem);
  if (!inputs) return inputs.err();
  std::vector<tensor_info> out;
  for (const auto& t : *inputs) out.push_back(info_of(t));
  return out;
}

expected<tensor_info> kernelbench_module::output_info(uint64_t seed) {
  auto inputs = kernelbench_inputs(*this, seed);
  if (!inputs) return inputs.err();
  auto y = kernelbench_forward(*this, *inputs);
  if (!y) return y.err();
  return info_of(*y);
}

expected<double> kernelbench_module::eager_ms(uint64_t seed, int warmup, int runs) {
  if (runs < 1) return make_error("eager_ms: runs must be >= 1");
  auto inputs = kernelbench_inputs(*this, seed);
  if (!inputs) return inputs.err();
  const bool cuda = impl_->device.rfind("cuda", 0) == 0;
  auto sync = [&] {
    if (cuda) torch_module().attr("cuda").attr("synchronize")();
  };
  std::vector<double> ms;
  try {
    for (int i = 0; i < warmup + runs; ++i) {
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      auto y = kernelbench_forward(*this, *inputs);
      sync();
      const auto t1 = std::chrono::steady_clock::now();
      if (!y) return y.err();
      if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  } catch (const std::exception& e) {
    return make_error(python_error(impl_->path, e));
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace crucible::kernels
