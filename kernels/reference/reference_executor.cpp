#include "kernels/reference/reference_executor.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {
namespace {

enum class op_kind {
  relu,
  leaky_relu,
  gelu,
  gelu_tanh,
  silu,
  sigmoid,
  tanh,
  exp,
  abs,
  neg,
  square,
  softplus,
  clamp,
  mul_scalar,
  add_scalar,
  add,
  sub,
  mul,
  row_sum,
  row_mean,
  row_max,
  softmax,
  log_softmax,
  layer_norm,
  rms_norm,
  matmul,
};

// The catalog's names, mapped once; an op the catalog has and this table lacks is an error at create().
const std::pair<const char*, op_kind> kind_table[] = {
    {"relu", op_kind::relu},
    {"leaky_relu", op_kind::leaky_relu},
    {"gelu", op_kind::gelu},
    {"gelu_tanh", op_kind::gelu_tanh},
    {"silu", op_kind::silu},
    {"sigmoid", op_kind::sigmoid},
    {"tanh", op_kind::tanh},
    {"exp", op_kind::exp},
    {"abs", op_kind::abs},
    {"neg", op_kind::neg},
    {"square", op_kind::square},
    {"softplus", op_kind::softplus},
    {"clamp", op_kind::clamp},
    {"mul_scalar", op_kind::mul_scalar},
    {"add_scalar", op_kind::add_scalar},
    {"add", op_kind::add},
    {"sub", op_kind::sub},
    {"mul", op_kind::mul},
    {"row_sum", op_kind::row_sum},
    {"row_mean", op_kind::row_mean},
    {"row_max", op_kind::row_max},
    {"softmax", op_kind::softmax},
    {"log_softmax", op_kind::log_softmax},
    {"layer_norm", op_kind::layer_norm},
    {"rms_norm", op_kind::rms_norm},
    {"matmul", op_kind::matmul},
};

struct prepared_op {
  op_kind kind;
  std::vector<int> args;  // indices into the task's inputs
  double a = 0.0;         // first attribute (alpha, lo, s, eps)
  double b = 0.0;         // second attribute (hi)
};

at::ScalarType scalar_type_of(const std::string& dtype) {
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float64") return at::kDouble;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "bfloat16") return at::kBFloat16;
  throw std::invalid_argument("reference: unsupported dtype '" + dtype + "'");
}

bool is_floating(const std::string& dtype) {
  return dtype == "float32" || dtype == "float64" || dtype == "float16" || dtype == "bfloat16";
}

// splitmix64: decorrelates the (seed, input, variant) triple into one 64-bit seed.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Own samplers over mt19937_64 (whose output the standard fixes), so inputs are the same with any standard
// library and any LibTorch version; std::normal_distribution and at::randn promise no such thing.
struct sampler {
  std::mt19937_64 rng;
  bool has_spare = false;
  double spare = 0.0;

  double uniform01() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }       // [0, 1)
  double open01() { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
  double normal() {  // Marsaglia's polar method, both values used
    if (has_spare) {
      has_spare = false;
      return spare;
    }
    double u, v, r2;
    do {
      u = 2.0 * uniform01() - 1.0;
      v = 2.0 * uniform01() - 1.0;
      r2 = u * u + v * v;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    spare = v * f;
    has_spare = true;
    return u * f;
  }
  double student_t2() {  // inverse CDF of Student's t with 2 degrees of freedom
    const double u = open01();
    return (2.0 * u - 1.0) / std::sqrt(2.0 * u * (1.0 - u));
  }
};

constexpr double heavy_clip = 1e3;

// How one input's values are drawn under one variant, decided once per tensor (see the header).
struct value_source {
  enum { normal, uniform, positive, heavy, heavy_abs } kind = normal;
  double scale = 1.0, lo = 0.0, hi = 1.0, offset = 0.0;

  value_source(const tensor_spec& spec, input_variant variant) : scale(spec.scale), lo(spec.lo), hi(spec.hi) {
    const bool heavy_variant =
        spec.dist == "heavy_tailed" || (variant == input_variant::heavy_tailed && !spec.param);
    if (heavy_variant) {
      // Keep the nominal distribution's sign domain: a positive input stays positive.
      if (spec.dist == "positive")
        kind = heavy_abs, offset = 0.05 * spec.scale;
      else if (spec.dist == "uniform" && spec.lo >= 0)
        kind = heavy_abs, offset = spec.lo;
      else
        kind = heavy;
    } else if (spec.dist == "uniform") {
      kind = uniform;
    } else if (spec.dist == "positive") {
      kind = positive;
    }
  }

  double operator()(sampler& s) const {
    switch (kind) {
      case normal:
        return scale * s.normal();
      case uniform:
        return lo + (hi - lo) * s.uniform01();
      case positive:
        return scale * (std::abs(s.normal()) + 0.05);
      case heavy:
        return scale * std::clamp(s.student_t2(), -heavy_clip, heavy_clip);
      case heavy_abs:
        return scale * std::min(std::abs(s.student_t2()), heavy_clip) + offset;
    }
    return 0.0;
  }
};

}  // namespace

struct reference_executor::impl {
  task_spec task;
  std::vector<int64_t> output_shape;
  std::vector<prepared_op> ops;

  std::vector<at::Tensor> wrap(const std::vector<host_tensor>& inputs) const {
    if (inputs.size() != task.inputs.size())
      throw std::invalid_argument("reference '" + task.name + "': expected " +
                                  std::to_string(task.inputs.size()) + " inputs, got " +
                                  std::to_string(inputs.size()));
    std::vector<at::Tensor> out;
    out.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& spec = task.inputs[i];
      if (inputs[i].dtype() != spec.dtype || inputs[i].shape() != spec.shape)
        throw std::invalid_argument("reference '" + task.name + "': input '" + spec.name + "' must be " +
                                    spec.dtype + shape_str(spec.shape) + ", got " + inputs[i].dtype() +
                                    shape_str(inputs[i].shape()));
      // from_blob does not copy; the reference never writes its inputs.
      out.push_back(at::from_blob(const_cast<void*>(inputs[i].data()), spec.shape,
                                  at::TensorOptions().dtype(scalar_type_of(spec.dtype))));
    }
    return out;
  }

  at::Tensor forward(const std::vector<at::Tensor>& in) const {
    at::Tensor v = in[0];
    for (const auto& op : ops) {
      auto arg = [&](size_t k) { return k < op.args.size() ? in[op.args[k]] : at::Tensor(); };
      switch (op.kind) {
        case op_kind::relu:
          v = at::relu(v);
          break;
        case op_kind::leaky_relu:
          v = at::leaky_relu(v, op.a);
          break;
        case op_kind::gelu:
          v = at::gelu(v);
          break;  // exact (erf)
        case op_kind::gelu_tanh:
          v = at::gelu(v, "tanh");
          break;
        case op_kind::silu:
          v = at::silu(v);
          break;
        case op_kind::sigmoid:
          v = at::sigmoid(v);
          break;
        case op_kind::tanh:
          v = at::tanh(v);
          break;
        case op_kind::exp:
          v = at::exp(v);
          break;
        case op_kind::abs:
          v = at::abs(v);
          break;
        case op_kind::neg:
          v = at::neg(v);
          break;
        case op_kind::square:
          v = at::square(v);
          break;
        case op_kind::softplus:
          v = at::softplus(v, 1, 20);
          break;  // torch defaults: beta 1, threshold 20
        case op_kind::clamp:
          v = at::clamp(v, at::Scalar(op.a), at::Scalar(op.b));
          break;
        case op_kind::mul_scalar:
          v = at::mul(v, at::Scalar(op.a));
          break;
        case op_kind::add_scalar:
          v = at::add(v, at::Scalar(op.a));
          break;
        case op_kind::add:
          v = at::add(v, arg(0));
          break;  // a 1-D side input broadcasts along the last dim
        case op_kind::sub:
          v = at::sub(v, arg(0));
          break;
        case op_kind::mul:
          v = at::mul(v, arg(0));
          break;
        case op_kind::row_sum:
          v = at::sum(v, {-1});
          break;
        case op_kind::row_mean:
          v = at::mean(v, {-1});
          break;
        case op_kind::row_max:
          v = at::amax(v, {-1});
          break;
        case op_kind::softmax:
          v = at::softmax(v, -1);
          break;
        case op_kind::log_softmax:
          v = at::log_softmax(v, -1);
          break;
        case op_kind::layer_norm:
          v = at::layer_norm(v, {v.size(-1)}, arg(0), arg(1), op.a);
          break;
        case op_kind::rms_norm: {
          // Eager, op by op, as a framework without a fused rms_norm runs it.
          v = at::mul(v,
                      at::rsqrt(at::add(at::mean(at::square(v), {-1}, /*keepdim=*/true), at::Scalar(op.a))));
          if (!op.args.empty()) v = at::mul(v, arg(0));
          break;
        }
        case op_kind::matmul:
          v = at::matmul(v, arg(0));
          break;
      }
    }
    return v;
  }
};

reference_executor::reference_executor(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
reference_executor::reference_executor(reference_executor&&) noexcept = default;
reference_executor& reference_executor::operator=(reference_executor&&) noexcept = default;
reference_executor::~reference_executor() = default;

expected<reference_executor> reference_executor::create(const task_spec& task) {
  auto shapes = infer_shapes(task);
  if (!shapes) return make_error(shapes.message());
  for (size_t i = 0; i < task.inputs.size(); ++i)
    if (!is_floating(task.inputs[i].dtype))
      return make_error(
          "task '" + task.name + "': inputs[" + std::to_string(i) + "] ('" + task.inputs[i].name +
          "'): the reference supports floating dtypes only (float32, float64, float16, bfloat16), got " +
          task.inputs[i].dtype);
  auto p = std::make_unique<impl>();
  p->task = task;
  p->output_shape = shapes->output();
  for (size_t i = 0; i < task.ops.size(); ++i) {
    const auto& spec = task.ops[i];
    prepared_op op{};
    bool found = false;
    for (const auto& [name, kind] : kind_table)
      if (spec.op == name) op.kind = kind, found = true;
    if (!found)
      return make_error("task '" + task.name + "': ops[" + std::to_string(i) + "] (" + spec.op +
                        "): the reference has no implementation of this op");
    for (const auto& a : spec.args) op.args.push_back(input_index(task, a));
    switch (op.kind) {
      case op_kind::leaky_relu:
        op.a = op_attr(spec, "alpha");
        break;
      case op_kind::clamp:
        op.a = op_attr(spec, "lo"), op.b = op_attr(spec, "hi");
        break;
      case op_kind::mul_scalar:
      case op_kind::add_scalar:
        op.a = op_attr(spec, "s");
        break;
      case op_kind::layer_norm:
      case op_kind::rms_norm:
        op.a = op_attr(spec, "eps");
        break;
      default:
        break;
    }
    p->ops.push_back(std::move(op));
  }
  return reference_executor(std::move(p));
}

const task_spec& reference_executor::task() const {
  return impl_->task;
}
const std::vector<int64_t>& reference_executor::output_shape() const {
  return impl_->output_shape;
}
const std::string& reference_executor::output_dtype() const {
  return impl_->task.inputs[0].dtype;
}

std::vector<host_tensor> reference_executor::make_inputs(uint64_t seed, input_variant variant) const {
  std::vector<host_tensor> out;
  const auto& specs = impl_->task.inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& spec = specs[i];
    // Parameters ignore the variant entirely, so both variants of one seed share the same weights.
    const auto effective = spec.param ? input_variant::nominal : variant;
    sampler s{std::mt19937_64(mix(mix(mix(seed) ^ (i + 1)) ^ static_cast<uint64_t>(effective)))};
    const value_source draw(spec, effective);
    host_tensor t(spec.dtype, spec.shape);
    const int64_t n = t.numel();
    if (spec.dtype == "float32") {
      float* p = t.as<float>();
      for (int64_t k = 0; k < n; ++k) p[k] = static_cast<float>(draw(s));
    } else if (spec.dtype == "float64") {
      double* p = t.as<double>();
      for (int64_t k = 0; k < n; ++k) p[k] = draw(s);
    } else {  // half types: round-to-nearest through LibTorch's conversion (IEEE, version independent)
      std::vector<double> values(static_cast<size_t>(n));
      for (auto& v : values) v = draw(s);
      at::Tensor half = at::from_blob(values.data(), spec.shape, at::kDouble).to(scalar_type_of(spec.dtype));
      std::memcpy(t.data(), half.data_ptr(), t.bytes());
    }
    out.push_back(std::move(t));
  }
  return out;
}

host_tensor reference_executor::make_output() const {
  return host_tensor(output_dtype(), impl_->output_shape);
}

void reference_executor::run(const std::vector<host_tensor>& inputs, host_tensor& out) const {
  if (out.dtype() != output_dtype() || out.shape() != impl_->output_shape)
    throw std::invalid_argument("reference '" + impl_->task.name + "': output must be " + output_dtype() +
                                shape_str(impl_->output_shape) + ", got " + out.dtype() +
                                shape_str(out.shape()));
  const auto in = impl_->wrap(inputs);
  at::Tensor result = impl_->forward(in);
  at::from_blob(out.data(), impl_->output_shape, at::TensorOptions().dtype(scalar_type_of(out.dtype())))
      .copy_(result);
}

double reference_executor::run_timed(const std::vector<host_tensor>& inputs) const {
  const auto in = impl_->wrap(inputs);
  const auto start = std::chrono::steady_clock::now();
  at::Tensor result = impl_->forward(in);  // CPU ops are synchronous: the result is complete here
  const auto stop = std::chrono::steady_clock::now();
  (void)result;
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

void set_reference_threads(int threads) {
  at::set_num_threads(std::max(1, threads));
}

}  // namespace crucible::kernels
