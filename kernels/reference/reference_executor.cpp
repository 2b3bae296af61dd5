#include "kernels/reference/reference_executor.hpp"
#include "kernels/reference/torch_dtypes.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
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
  elu,
  selu,
  hardswish,
  hardsigmoid,
  softsign,
  mish,
  reduce_sum,
  reduce_mean,
  reduce_max,
  reduce_min,
  cumsum,
  conv2d,
  conv3d,
  conv_transpose2d,
  conv_transpose3d,
  max_pool2d,
  avg_pool2d,
  max_pool3d,
  avg_pool3d,
  global_avg_pool,
  batch_norm,
  instance_norm,
  group_norm,
  mse_loss,
  huber_loss,
  cross_entropy,
  kl_div,
  cosine_loss,
  bmm,
  attention,
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
    {"elu", op_kind::elu},
    {"selu", op_kind::selu},
    {"hardswish", op_kind::hardswish},
    {"hardsigmoid", op_kind::hardsigmoid},
    {"softsign", op_kind::softsign},
    {"mish", op_kind::mish},
    {"reduce_sum", op_kind::reduce_sum},
    {"reduce_mean", op_kind::reduce_mean},
    {"reduce_max", op_kind::reduce_max},
    {"reduce_min", op_kind::reduce_min},
    {"cumsum", op_kind::cumsum},
    {"conv2d", op_kind::conv2d},
    {"conv3d", op_kind::conv3d},
    {"conv_transpose2d", op_kind::conv_transpose2d},
    {"conv_transpose3d", op_kind::conv_transpose3d},
    {"max_pool2d", op_kind::max_pool2d},
    {"avg_pool2d", op_kind::avg_pool2d},
    {"max_pool3d", op_kind::max_pool3d},
    {"avg_pool3d", op_kind::avg_pool3d},
    {"global_avg_pool", op_kind::global_avg_pool},
    {"batch_norm", op_kind::batch_norm},
    {"instance_norm", op_kind::instance_norm},
    {"group_norm", op_kind::group_norm},
    {"mse_loss", op_kind::mse_loss},
    {"huber_loss", op_kind::huber_loss},
    {"cross_entropy", op_kind::cross_entropy},
    {"kl_div", op_kind::kl_div},
    {"cosine_loss", op_kind::cosine_loss},
    {"bmm", op_kind::bmm},
    {"attention", op_kind::attention},
};

struct prepared_op {
  op_kind kind;
  std::vector<int> args;  // indices into the task's inputs
  double a = 0.0;         // first attribute (alpha, lo, s, eps, delta, scale, dim, kernel)
  double b = 0.0;         // second attribute (hi, groups, causal, reverse)
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1, output_padding = 0;  // conv and pool
  bool exclusive = false;                                                         // cumsum
};

// Every dim after the first two: the spatial dims of [N, C, ...].
std::vector<int64_t> spatial_dims(const at::Tensor& v) {
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < v.dim(); ++d) dims.push_back(d);
  return dims;
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

uint64_t input_seed(uint64_t seed, size_t index, input_variant effective) {
  return mix(mix(mix(seed) ^ (index + 1)) ^ static_cast<uint64_t>(effective));
}

// make_inputs' values for one input, written to `dst` (contiguous, the spec's dtype and shape).
void fill_host(const tensor_spec& spec, size_t index, uint64_t seed, input_variant variant, void* dst) {
  // Parameters ignore the variant entirely, so both variants of one seed share the same weights.
  const auto effective = spec.param ? input_variant::nominal : variant;
  sampler s{std::mt19937_64(input_seed(seed, index, effective))};
  const value_source draw(spec, effective);
  int64_t n = 1;
  for (auto d : spec.shape) n *= d;
  if (spec.dtype == "float32") {
    float* p = static_cast<float*>(dst);
    for (int64_t k = 0; k < n; ++k) p[k] = static_cast<float>(draw(s));
  } else if (spec.dtype == "float64") {
    double* p = static_cast<double*>(dst);
    for (int64_t k = 0; k < n; ++k) p[k] = draw(s);
  } else {  // half types: round-to-nearest through LibTorch's conversion (IEEE, version independent)
    std::vector<double> values(static_cast<size_t>(n));
    for (auto& v : values) v = draw(s);
    at::Tensor half = at::from_blob(values.data(), spec.shape, at::kDouble).to(scalar_type_of(spec.dtype));
    std::memcpy(dst, half.data_ptr(), static_cast<size_t>(n) * half.element_size());
  }
}

// The same distributions drawn on the device by LibTorch. The device's default generator is borrowed under
// its lock: its state is saved, it is seeded from (seed, input, variant) (which also rewinds its offset),
// the draws are enqueued, and the state is restored, so other users of that generator see no change and
// the values depend only on (seed, input, variant, shape) and the LibTorch build.
void fill_device(const tensor_spec& spec, size_t index, uint64_t seed, input_variant variant, at::Tensor& t,
                 int device) {
  const auto effective = spec.param ? input_variant::nominal : variant;
  const value_source draw(spec, effective);
  at::Generator gen =
      at::globalContext().defaultGenerator(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
  // The lock is held only around state changes: the draws below take the generator's mutex themselves
  // (holding it across them deadlocks). The worker is single-threaded, so nothing draws in between.
  at::Tensor saved;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    saved = gen.get_state();
    gen.set_current_seed(input_seed(seed, index, effective));
  }
  switch (draw.kind) {
    case value_source::normal:
      t.normal_(0.0, draw.scale, gen);
      break;
    case value_source::uniform:
      t.uniform_(draw.lo, draw.hi, gen);
      break;
    case value_source::positive:
      t.normal_(0.0, 1.0, gen).abs_().add_(0.05).mul_(draw.scale);
      break;
    case value_source::heavy:
    case value_source::heavy_abs: {
      // Inverse CDF of Student's t(2) on u in (0, 1), clipped to +-1e3 as on the host.
      t.uniform_(0.0, 1.0, gen).clamp_(1e-7, 1.0 - 1e-7);
      at::Tensor denom = at::sqrt(at::mul(at::mul(t, at::rsub(t, 1.0)), 2.0));
      t.mul_(2.0).sub_(1.0).div_(denom).clamp_(-heavy_clip, heavy_clip);
      if (draw.kind == value_source::heavy_abs) t.abs_();
      t.mul_(draw.scale).add_(draw.offset);
      break;
    }
  }
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(saved);
}

bool is_contiguous(const cru_tensor& t) {
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

// Views must match the task's inputs in number, dtype and shape (a caller bug otherwise).
void check_views(const task_spec& task, const std::vector<cru_tensor>& views, const char* what) {
  if (views.size() != task.inputs.size())
    throw std::invalid_argument("reference '" + task.name + "': " + what + ": expected " +
                                std::to_string(task.inputs.size()) + " tensors, got " +
                                std::to_string(views.size()));
  for (size_t i = 0; i < views.size(); ++i) {
    const auto& spec = task.inputs[i];
    const auto& v = views[i];
    if (v.ndim < 0 || v.ndim > 8 || v.dtype != dtype_code(spec.dtype) ||
        std::vector<int64_t>(v.shape, v.shape + v.ndim) != spec.shape || !v.data)
      throw std::invalid_argument("reference '" + task.name + "': " + what + ": input '" + spec.name +
                                  "' must be " + spec.dtype + shape_str(spec.shape));
  }
}

// A LibTorch tensor over an ABI view (no copy), on the device `base` names.
at::Tensor wrap_view(const cru_tensor& t, const at::TensorOptions& base) {
  return at::from_blob(t.data, at::IntArrayRef(t.shape, static_cast<size_t>(t.ndim)),
                       at::IntArrayRef(t.stride, static_cast<size_t>(t.ndim)),
                       base.dtype(scalar_type_of_code(t.dtype)));
}

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
        case op_kind::elu:
          v = at::elu(v, op.a);
          break;
        case op_kind::selu:
          v = at::selu(v);
          break;
        case op_kind::hardswish:
          v = at::hardswish(v);
          break;
        case op_kind::hardsigmoid:
          v = at::hardsigmoid(v);
          break;
        case op_kind::softsign:  // what torch.nn.functional.softsign computes
          v = at::div(v, at::add(at::abs(v), 1));
          break;
        case op_kind::mish:
          v = at::mish(v);
          break;
        case op_kind::reduce_sum:
          v = at::sum(v, {static_cast<int64_t>(op.a)});
          break;
        case op_kind::reduce_mean:
          v = at::mean(v, {static_cast<int64_t>(op.a)});
          break;
        case op_kind::reduce_max:
          v = at::amax(v, {static_cast<int64_t>(op.a)});
          break;
        case op_kind::reduce_min:
          v = at::amin(v, {static_cast<int64_t>(op.a)});
          break;
        case op_kind::cumsum: {
          // torch has neither flag: reverse through flips, exclusive by subtracting the element itself.
          const bool reverse = op.b != 0;
          at::Tensor x = reverse ? at::flip(v, {-1}) : v;
          at::Tensor c = at::cumsum(x, -1);
          if (op.exclusive) c = at::sub(c, x);
          v = reverse ? at::flip(c, {-1}) : c;
          break;
        }
        case op_kind::conv2d:
          v = at::conv2d(v, arg(0), arg(1), {op.stride, op.stride}, {op.padding, op.padding},
                         {op.dilation, op.dilation}, op.groups);
          break;
        case op_kind::conv3d:
          v = at::conv3d(v, arg(0), arg(1), {op.stride, op.stride, op.stride},
                         {op.padding, op.padding, op.padding}, {op.dilation, op.dilation, op.dilation},
                         op.groups);
          break;
        case op_kind::conv_transpose2d:
          v = at::conv_transpose2d(v, arg(0), arg(1), {op.stride, op.stride}, {op.padding, op.padding},
                                   {op.output_padding, op.output_padding});
          break;
        case op_kind::conv_transpose3d:
          v = at::conv_transpose3d(v, arg(0), arg(1), {op.stride, op.stride, op.stride},
                                   {op.padding, op.padding, op.padding},
                                   {op.output_padding, op.output_padding, op.output_padding});
          break;
        case op_kind::max_pool2d: {
          const auto k = static_cast<int64_t>(op.a);
          v = at::max_pool2d(v, {k, k}, {op.stride, op.stride}, {op.padding, op.padding});
          break;
        }
        case op_kind::avg_pool2d: {
          const auto k = static_cast<int64_t>(op.a);
          v = at::avg_pool2d(v, {k, k}, {op.stride, op.stride}, {op.padding, op.padding});
          break;
        }
        case op_kind::max_pool3d: {
          const auto k = static_cast<int64_t>(op.a);
          v = at::max_pool3d(v, {k, k, k}, {op.stride, op.stride, op.stride},
                             {op.padding, op.padding, op.padding});
          break;
        }
        case op_kind::avg_pool3d: {
          const auto k = static_cast<int64_t>(op.a);
          v = at::avg_pool3d(v, {k, k, k}, {op.stride, op.stride, op.stride},
                             {op.padding, op.padding, op.padding});
          break;
        }
        case op_kind::global_avg_pool:
          v = at::mean(v, spatial_dims(v));
          break;
        case op_kind::batch_norm:  // training-mode statistics, no running buffers
          v = at::batch_norm(v, arg(0), arg(1), at::Tensor(), at::Tensor(), /*training=*/true, 0.1, op.a,
                             /*cudnn_enabled=*/true);
          break;
        case op_kind::instance_norm:
          v = at::instance_norm(v, arg(0), arg(1), at::Tensor(), at::Tensor(), /*use_input_stats=*/true, 0.1,
                                op.a, /*cudnn_enabled=*/true);
          break;
        case op_kind::group_norm:
          v = at::group_norm(v, static_cast<int64_t>(op.b), arg(0), arg(1), op.a, /*cudnn_enabled=*/true);
          break;
        case op_kind::mse_loss:
          v = at::mse_loss(v, arg(0));  // reduction: mean
          break;
        case op_kind::huber_loss:
          v = at::huber_loss(v, arg(0), at::Reduction::Mean, op.a);
          break;
        case op_kind::cross_entropy:  // soft targets: mean over rows of -sum t log_softmax(v)
          v = at::mean(at::neg(at::sum(at::mul(arg(0), at::log_softmax(v, -1)), {-1})));
          break;
        case op_kind::kl_div:  // batchmean
          v = at::div(at::sum(at::mul(arg(0), at::sub(at::log(arg(0)), v))), v.size(0));
          break;
        case op_kind::cosine_loss:
          v = at::mean(at::rsub(at::cosine_similarity(v, arg(0), -1, 1e-8), 1));
          break;
        case op_kind::bmm:
          v = at::bmm(v, arg(0));
          break;
        case op_kind::attention: {
          // matmul, softmax, matmul: what eager attention is without a fused kernel.
          const double scale = op.a > 0 ? op.a : 1.0 / std::sqrt(static_cast<double>(v.size(-1)));
          at::Tensor scores = at::mul(at::matmul(v, arg(0).transpose(-2, -1)), scale);
          if (op.b != 0) {
            const int64_t s = v.size(-2);
            at::Tensor mask = at::ones({s, s}, v.options().dtype(at::kBool)).triu(1);
            scores = scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
          }
          v = at::matmul(at::softmax(scores, -1), arg(1));
          break;
        }
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
    if (!is_floating_dtype(task.inputs[i].dtype))
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
      case op_kind::batch_norm:
      case op_kind::instance_norm:
        op.a = op_attr(spec, "eps");
        break;
      case op_kind::group_norm:
        op.a = op_attr(spec, "eps"), op.b = op_attr(spec, "groups");
        break;
      case op_kind::elu:
        op.a = op_attr(spec, "alpha");
        break;
      case op_kind::huber_loss:
        op.a = op_attr(spec, "delta");
        break;
      case op_kind::attention:
        op.a = op_attr(spec, "scale"), op.b = op_attr(spec, "causal");
        break;
      case op_kind::reduce_sum:
      case op_kind::reduce_mean:
      case op_kind::reduce_max:
      case op_kind::reduce_min:
        op.a = op_attr(spec, "dim");
        break;
      case op_kind::cumsum:
        op.b = op_attr(spec, "reverse"), op.exclusive = op_attr(spec, "exclusive") != 0;
        break;
      case op_kind::conv2d:
      case op_kind::conv3d:
      case op_kind::conv_transpose2d:
      case op_kind::conv_transpose3d:
        op.stride = static_cast<int64_t>(op_attr(spec, "stride"));
        op.padding = static_cast<int64_t>(op_attr(spec, "padding"));
        op.dilation = static_cast<int64_t>(op_attr(spec, "dilation"));
        op.groups = static_cast<int64_t>(op_attr(spec, "groups"));
        op.output_padding = static_cast<int64_t>(op_attr(spec, "output_padding"));
        if (op.dilation == 0) op.dilation = 1;  // the transposed convs have no such attribute
        if (op.groups == 0) op.groups = 1;
        break;
      case op_kind::max_pool2d:
      case op_kind::avg_pool2d:
      case op_kind::max_pool3d:
      case op_kind::avg_pool3d:
        op.a = op_attr(spec, "kernel");
        op.stride = static_cast<int64_t>(op_attr(spec, "stride"));
        if (op.stride == 0) op.stride = static_cast<int64_t>(op.a);
        op.padding = static_cast<int64_t>(op_attr(spec, "padding"));
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
task_cost reference_executor::minimum_cost() const {
  return kernels::minimum_cost(impl_->task);
}

std::vector<host_tensor> reference_executor::make_inputs(uint64_t seed, input_variant variant) const {
  std::vector<host_tensor> out;
  const auto& specs = impl_->task.inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    host_tensor t(specs[i].dtype, specs[i].shape);
    fill_host(specs[i], i, seed, variant, t.data());
    out.push_back(std::move(t));
  }
  return out;
}

void reference_executor::fill_inputs(const std::vector<cru_tensor>& dst, uint64_t seed, input_variant variant,
                                     int device) const {
  const auto& specs = impl_->task.inputs;
  check_views(impl_->task, dst, "fill_inputs");
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& spec = specs[i];
    if (!is_contiguous(dst[i]))
      throw std::invalid_argument("reference '" + impl_->task.name + "': fill_inputs: input '" + spec.name +
                                  "' must be contiguous");
    if (device < 0) {
      fill_host(spec, i, seed, variant, dst[i].data);
    } else {
      at::Tensor t =
          at::from_blob(dst[i].data, spec.shape,
                        at::TensorOptions().dtype(scalar_type_of(spec.dtype)).device(at::kCUDA, device));
      fill_device(spec, i, seed, variant, t, device);
    }
  }
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

void reference_executor::run_views(const std::vector<cru_tensor>& inputs, const cru_tensor* out,
                                   int device) const {
  const auto& task = impl_->task;
  check_views(task, inputs, "run_views");
  at::TensorOptions base;
  if (device >= 0) base = base.device(at::kCUDA, device);
  std::vector<at::Tensor> in;
  in.reserve(inputs.size());
  for (const auto& t : inputs) in.push_back(wrap_view(t, base));
  at::Tensor result = impl_->forward(in);
  if (!out) return;  // eager timing: the result stays in LibTorch's tensor
  if (out->dtype != dtype_code(output_dtype()) ||
      std::vector<int64_t>(out->shape, out->shape + out->ndim) != impl_->output_shape)
    throw std::invalid_argument("reference '" + task.name + "': run_views: output must be " + output_dtype() +
                                shape_str(impl_->output_shape));
  wrap_view(*out, base).copy_(result);
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

void set_reference_strict_fp32() {
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
}

}  // namespace crucible::kernels
