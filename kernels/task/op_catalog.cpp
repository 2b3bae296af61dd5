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
