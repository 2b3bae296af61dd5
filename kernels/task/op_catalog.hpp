#pragma once
// The op vocabulary of tasks: what each op is called, what it reads and which scalars it takes. The task
// loader validates against it, the reference executor and the emitters implement it, and the program space
// derives fusion legality from each op's class. One table, so the four never disagree.
#include <string>
#include <string_view>
#include <vector>

#include "messages/task.hpp"

namespace crucible::kernels {

/// How an op touches the running value; fusion and strategies follow from this.
enum class op_class {
  unary,         ///< elementwise f(v): relu, gelu, tanh, ...
  scalar,        ///< elementwise with a scalar attribute: v*s, v+s
  binary,        ///< elementwise with a side input broadcastable (numpy rules) to the running shape: v+t
  row_reduce,    ///< reduces the last dim: [.., C] -> [..]
  row_norm,      ///< row-wise, shape-preserving, needs row statistics: softmax, layer_norm, ...
  gemm,          ///< [.., K] x W[K, N] -> [.., N]
  dim_reduce,    ///< reduces one dim (attrs.dim, may be negative): [.., D, ..] -> [.., ..]
  scan,          ///< prefix sums along the last dim, shape-preserving
  conv,          ///< conv2d/3d and conv_transpose2d/3d on [N, C, spatial..]
  pool,          ///< max/avg pooling on [N, C, spatial..], global average pooling -> [N, C]
  channel_norm,  ///< normalization with statistics per channel (dim 1): batch, instance, group norm
  loss,          ///< v and a target of the same shape -> a 0-dim scalar
  bmm,           ///< batched matmul [B, M, K] x W[B, K, N] -> [B, M, N]
  attention,     ///< softmax(q k^T * scale [+ causal mask]) v on [B, H, S, D]
};

const char* to_string(op_class c);

struct attr_info {
  std::string name;
  double default_value = 0.0;
  bool required = false;
};

struct op_info {
  std::string name;
  op_class cls = op_class::unary;
  int min_args = 0;  ///< side inputs read (by name from the task's inputs)
  int max_args = 0;
  std::vector<attr_info> attrs;
  bool monotone_increasing = false;  ///< f(max(v)) == max(f(v)) along a row
  std::string summary;
};

/// All ops, in a stable order (their index is part of the policy's vocabulary).
const std::vector<op_info>& op_catalog();

/// nullptr when the op is unknown.
const op_info* find_op(std::string_view name);

/// The op's attribute `name`, or the catalog default when the task leaves it out.
double op_attr(const op_spec& op, std::string_view name);

/// Default tolerance for a dtype (KernelBench today: float32 1e-4, half types 1e-2).
double default_tolerance(std::string_view dtype);

/// Bytes per element of a dtype name, 0 if unknown.
int dtype_size(std::string_view dtype);

/// ABI dtype code of a dtype name (crucible_abi.h), -1 if unknown.
int dtype_code(std::string_view dtype);

}  // namespace crucible::kernels
