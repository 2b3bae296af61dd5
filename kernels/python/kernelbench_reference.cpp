#include "kernels/python/kernelbench_reference.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "kernels/python/kernelbench_module.hpp"
#include "kernels/python/kernelbench_tensors.hpp"
#include "kernels/reference/torch_dtypes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

namespace {

constexpr double heavy_clip = 1e3;

}  // namespace

expected<task_spec> kernelbench_task(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": no such file");
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return kernelbench_task_from_source(path, source, name);
}

expected<task_spec> kernelbench_task_from_source(const std::string& file_name, const std::string& source,
                                                 const std::string& name) {
  auto m = kernelbench_module::from_source(file_name, source);
  if (!m) return m.err();
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
  auto ref = kernelbench_reference::create(t);
  if (!ref) return ref.err();
  return t;
}

struct kernelbench_reference::impl {
  task_spec task;
  std::unique_ptr<kernelbench_module> module;
  std::vector<int64_t> output_shape;
  std::string output_dtype;
};

kernelbench_reference::kernelbench_reference(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
kernelbench_reference::~kernelbench_reference() = default;

expected<std::unique_ptr<kernelbench_reference>> kernelbench_reference::create(const task_spec& task) {
  if (task.module.empty()) return make_error("task '" + task.name + "' has no KernelBench module");
  auto m = kernelbench_module::from_source(task.name + ".py", task.module);
  if (!m) return m.err();
  if (auto st = m->instantiate(kernelbench_model_seed, "cpu"); !st) return st.err();
  auto p = std::make_unique<impl>();
  p->task = task;
  p->module = std::make_unique<kernelbench_module>(std::move(*m));
  auto inputs = kernelbench_inputs(*p->module, 0);
  if (!inputs) return inputs.err();
  if (inputs->size() != task.inputs.size())
    return make_error(task.name + ": get_inputs() draws " + std::to_string(inputs->size()) +
                      " tensors, the task describes " + std::to_string(task.inputs.size()));
  auto y = kernelbench_forward(*p->module, *inputs);
  if (!y) return y.err();
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
host_tensor kernelbench_reference::make_output() const {
  return host_tensor(impl_->output_dtype, impl_->output_shape);
}

void kernelbench_reference::fill_inputs(const std::vector<cru_tensor>& dst, uint64_t seed,
                                        input_variant variant, int device) const {
  if (device >= 0) throw std::invalid_argument("kernelbench_reference: host memory only");
  auto drawn = kernelbench_inputs(*impl_->module, seed);
  if (!drawn) throw std::runtime_error(drawn.message());
  if (drawn->size() != dst.size())
    throw std::invalid_argument("kernelbench_reference: " + std::to_string(dst.size()) + " views for " +
                                std::to_string(drawn->size()) + " inputs");
  auto gen = at::detail::createCPUGenerator(seed ^ 0x6b62ull);
  for (size_t i = 0; i < dst.size(); ++i) {
    at::Tensor x = (*drawn)[i];
    at::Tensor to = tensor_of_view(dst[i]);
    if (x.sizes() != to.sizes() || x.scalar_type() != to.scalar_type())
      throw std::invalid_argument("kernelbench_reference: get_inputs()[" + std::to_string(i) + "] drew " +
                                  describe(x) + ", the task describes " + describe(to));
    if (variant == input_variant::heavy_tailed && at::isFloatingType(x.scalar_type())) {
      auto opts = at::TensorOptions().dtype(at::kDouble);
      at::Tensor z = at::randn(x.sizes(), gen, opts);
      at::Tensor e = at::empty(x.sizes(), opts).exponential_(1.0, gen);
      at::Tensor t = (z / e.sqrt()).abs().clamp_max(heavy_clip);
      x = (x.to(at::kDouble) * (t + 1.0)).to(x.scalar_type());
    }
    to.copy_(x);
  }
}

void kernelbench_reference::run_views(const std::vector<cru_tensor>& inputs, const cru_tensor* out,
                                      int device) const {
  if (device >= 0) throw std::invalid_argument("kernelbench_reference: host memory only");
  std::vector<at::Tensor> xs;
  xs.reserve(inputs.size());
  for (const auto& v : inputs) xs.push_back(tensor_of_view(v));
  auto y = kernelbench_forward(*impl_->module, xs);
  if (!y) throw std::runtime_error(y.message());
  if (!out) return;
  at::Tensor o = tensor_of_view(*out);
  if (y->sizes() != o.sizes() || y->scalar_type() != o.scalar_type())
    throw std::runtime_error(impl_->task.name + ": forward() returned " + describe(*y) + ", first " +
                             describe(o));
  o.copy_(*y);
}

}  // namespace crucible::kernels
