#include "kernels/task/op_catalog.hpp"

#include "kernels/abi/crucible_abi.h"

namespace crucible::kernels {

const char* to_string(op_class c) {
  switch (c) {
    case op_class::unary:
      return "unary";
    case op_class::scalar:
      return "scalar";
    case op_class::binary:
      return "binary";
    case op_class::row_reduce:
      return "row_reduce";
    case op_class::row_norm:
      return "row_norm";
    case op_class::gemm:
      return "gemm";
    case op_class::dim_reduce:
      return "dim_reduce";
    case op_class::scan:
      return "scan";
    case op_class::conv:
      return "conv";
    case op_class::pool:
      return "pool";
    case op_class::channel_norm:
      return "channel_norm";
    case op_class::loss:
      return "loss";
    case op_class::bmm:
      return "bmm";
    case op_class::attention:
      return "attention";
  }
  return "?";
}

const std::vector<op_info>& op_catalog() {
  static const std::vector<op_info> ops = {
      {"relu", op_class::unary, 0, 0, {}, true, "max(v, 0)"},
      {"leaky_relu", op_class::unary, 0, 0, {{"alpha", 0.01, false}}, true, "v if v > 0 else alpha*v"},
      {"gelu", op_class::unary, 0, 0, {}, false, "v * Phi(v) (exact, erf)"},
      {"gelu_tanh", op_class::unary, 0, 0, {}, false, "tanh approximation of gelu"},
      {"silu", op_class::unary, 0, 0, {}, false, "v * sigmoid(v)"},
      {"sigmoid", op_class::unary, 0, 0, {}, true, "1 / (1 + exp(-v))"},
      {"tanh", op_class::unary, 0, 0, {}, true, "tanh(v)"},
      {"exp", op_class::unary, 0, 0, {}, true, "exp(v)"},
      {"abs", op_class::unary, 0, 0, {}, false, "|v|"},
      {"neg", op_class::unary, 0, 0, {}, false, "-v"},
      {"square", op_class::unary, 0, 0, {}, false, "v*v"},
      {"softplus", op_class::unary, 0, 0, {}, true, "log(1 + exp(v)), linear above 20 as in torch"},
      {"clamp", op_class::unary, 0, 0, {{"lo", 0.0, true}, {"hi", 0.0, true}}, true, "min(max(v, lo), hi)"},
      {"mul_scalar", op_class::scalar, 0, 0, {{"s", 1.0, true}}, false, "v * s"},
      {"add_scalar", op_class::scalar, 0, 0, {{"s", 0.0, true}}, true, "v + s"},
      {"add", op_class::binary, 1, 1, {}, false, "v + t"},
      {"sub", op_class::binary, 1, 1, {}, false, "v - t"},
      {"mul", op_class::binary, 1, 1, {}, false, "v * t"},
      {"row_sum", op_class::row_reduce, 0, 0, {}, false, "sum over the last dim"},
      {"row_mean", op_class::row_reduce, 0, 0, {}, false, "mean over the last dim"},
      {"row_max", op_class::row_reduce, 0, 0, {}, false, "max over the last dim"},
      {"softmax", op_class::row_norm, 0, 0, {}, false, "softmax over the last dim"},
      {"log_softmax", op_class::row_norm, 0, 0, {}, false, "log_softmax over the last dim"},
      {"layer_norm",
       op_class::row_norm,
       0,
       2,
       {{"eps", 1e-5, false}},
       false,
       "(v - mean) / sqrt(var + eps) * weight + bias over the last dim (args: [weight[, bias]])"},
      {"rms_norm",
       op_class::row_norm,
       0,
       1,
       {{"eps", 1e-6, false}},
       false,
       "v / sqrt(mean(v^2) + eps) * weight over the last dim (args: [weight])"},
      {"matmul", op_class::gemm, 1, 1, {}, false, "v[.., K] @ W[K, N] (args: [W])"},
      // Appended for the CUDA target (KernelBench levels 1 and 2); the order above stays fixed.
      {"elu", op_class::unary, 0, 0, {{"alpha", 1.0, false}}, true, "v if v > 0 else alpha*(exp(v) - 1)"},
      {"selu", op_class::unary, 0, 0, {}, true, "scale * elu(v, alpha) with torch's selu constants"},
      {"hardswish", op_class::unary, 0, 0, {}, false, "v * clamp(v + 3, 0, 6) / 6"},
      {"hardsigmoid", op_class::unary, 0, 0, {}, true, "clamp(v / 6 + 1/2, 0, 1)"},
      {"softsign", op_class::unary, 0, 0, {}, true, "v / (1 + |v|)"},
      {"mish", op_class::unary, 0, 0, {}, false, "v * tanh(softplus(v))"},
      {"reduce_sum", op_class::dim_reduce, 0, 0, {{"dim", 0.0, true}}, false, "sum over attrs.dim"},
      {"reduce_mean", op_class::dim_reduce, 0, 0, {{"dim", 0.0, true}}, false, "mean over attrs.dim"},
      {"reduce_max", op_class::dim_reduce, 0, 0, {{"dim", 0.0, true}}, false, "max over attrs.dim"},
      {"reduce_min", op_class::dim_reduce, 0, 0, {{"dim", 0.0, true}}, false, "min over attrs.dim"},
      {"cumsum",
       op_class::scan,
       0,
       0,
       {{"reverse", 0.0, false}, {"exclusive", 0.0, false}},
       false,
       "prefix sums along the last dim (reverse: from the end; exclusive: without the element itself)"},
      {"conv2d",
       op_class::conv,
       1,
       2,
       {{"stride", 1.0, false}, {"padding", 0.0, false}, {"dilation", 1.0, false}, {"groups", 1.0, false}},
       false,
       "torch conv2d on [N, C, H, W] (args: [W[, b]], W [O, C/groups, kh, kw], b [O])"},
      {"conv3d",
       op_class::conv,
       1,
       2,
       {{"stride", 1.0, false}, {"padding", 0.0, false}, {"dilation", 1.0, false}, {"groups", 1.0, false}},
       false,
       "torch conv3d on [N, C, D, H, W] (args: [W[, b]], W [O, C/groups, kd, kh, kw], b [O])"},
      {"conv_transpose2d",
       op_class::conv,
       1,
       2,
       {{"stride", 1.0, false}, {"padding", 0.0, false}, {"output_padding", 0.0, false}},
       false,
       "torch conv_transpose2d on [N, C, H, W] (args: [W[, b]], W [C, O, kh, kw], b [O])"},
      {"conv_transpose3d",
       op_class::conv,
       1,
       2,
       {{"stride", 1.0, false}, {"padding", 0.0, false}, {"output_padding", 0.0, false}},
       false,
       "torch conv_transpose3d on [N, C, D, H, W] (args: [W[, b]], W [C, O, kd, kh, kw], b [O])"},
      {"max_pool2d",
       op_class::pool,
       0,
       0,
       {{"kernel", 0.0, true}, {"stride", 0.0, false}, {"padding", 0.0, false}},
       false,
       "max over kernel x kernel windows of [N, C, H, W] (stride 0: the kernel)"},
      {"avg_pool2d",
       op_class::pool,
       0,
       0,
       {{"kernel", 0.0, true}, {"stride", 0.0, false}, {"padding", 0.0, false}},
       false,
       "mean over kernel x kernel windows of [N, C, H, W], padding counted (stride 0: the kernel)"},
      {"max_pool3d",
       op_class::pool,
       0,
       0,
       {{"kernel", 0.0, true}, {"stride", 0.0, false}, {"padding", 0.0, false}},
       false,
       "max over kernel^3 windows of [N, C, D, H, W] (stride 0: the kernel)"},
      {"avg_pool3d",
       op_class::pool,
       0,
       0,
       {{"kernel", 0.0, true}, {"stride", 0.0, false}, {"padding", 0.0, false}},
       false,
       "mean over kernel^3 windows of [N, C, D, H, W], padding counted (stride 0: the kernel)"},
      {"global_avg_pool", op_class::pool, 0, 0, {}, false, "mean over every dim after dim 1: -> [N, C]"},
      {"batch_norm",
       op_class::channel_norm,
       2,
       2,
       {{"eps", 1e-5, false}},
       false,
       "batch statistics per channel (dim 1), biased variance, * w + b (args: [w, b], each [C])"},
      {"instance_norm",
       op_class::channel_norm,
       0,
       2,
       {{"eps", 1e-5, false}},
       false,
       "statistics per (n, c) over the spatial dims (args: [] or [w, b], each [C])"},
      {"group_norm",
       op_class::channel_norm,
       2,
       2,
       {{"groups", 0.0, true}, {"eps", 1e-5, false}},
       false,
       "statistics per (n, group of channels) over its channels and spatial dims (args: [w, b], each [C])"},
      {"mse_loss", op_class::loss, 1, 1, {}, false, "mean((v - t)^2) -> [] (args: [t])"},
      {"huber_loss",
       op_class::loss,
       1,
       1,
       {{"delta", 1.0, false}},
       false,
       "mean of 0.5 d^2 if |d| < delta else delta (|d| - 0.5 delta), d = v - t -> [] (args: [t])"},
      {"cross_entropy",
       op_class::loss,
       1,
       1,
       {},
       false,
       "mean over rows of -sum_c t * log_softmax(v) (t probability rows) -> [] (args: [t])"},
      {"kl_div",
       op_class::loss,
       1,
       1,
       {},
       false,
       "sum t * (log t - v) / size(dim 0), v log-probabilities (batchmean) -> [] (args: [t])"},
      {"cosine_loss",
       op_class::loss,
       1,
       1,
       {},
       false,
       "mean over rows of 1 - cos(v_row, t_row), eps 1e-8 -> [] (args: [t])"},
      {"bmm", op_class::bmm, 1, 1, {}, false, "v[B, M, K] @ W[B, K, N] (args: [W])"},
      {"attention",
       op_class::attention,
       2,
       2,
       {{"scale", 0.0, false}, {"causal", 0.0, false}},
       false,
       "softmax(q k^T * scale [+ causal mask]) v, q = v [B, H, S, D] (args: [k, v]; scale 0: 1/sqrt(D))"},
  };
  return ops;
}

const op_info* find_op(std::string_view name) {
  for (const auto& op : op_catalog())
    if (op.name == name) return &op;
  return nullptr;
}

double op_attr(const op_spec& op, std::string_view name) {
  if (auto it = op.attrs.find(std::string(name)); it != op.attrs.end()) return it->second;
  if (const auto* info = find_op(op.op))
    for (const auto& a : info->attrs)
      if (a.name == name) return a.default_value;
  return 0.0;
}

double default_tolerance(std::string_view dtype) {
  if (dtype == "float16" || dtype == "bfloat16") return 1e-2;
  if (dtype == "float64") return 1e-7;
  if (dtype == "float32") return 1e-4;
  return 0.0;  // integer and bool outputs must match exactly
}

int dtype_size(std::string_view dtype) {
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float16" || dtype == "bfloat16") return 2;
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "bool") return 1;
  return 0;
}

int dtype_code(std::string_view dtype) {
  if (dtype == "float32") return CRU_FLOAT32;
  if (dtype == "float16") return CRU_FLOAT16;
  if (dtype == "bfloat16") return CRU_BFLOAT16;
  if (dtype == "float64") return CRU_FLOAT64;
  if (dtype == "int32") return CRU_INT32;
  if (dtype == "int64") return CRU_INT64;
  if (dtype == "bool") return CRU_BOOL;
  return -1;
}

}  // namespace crucible::kernels
