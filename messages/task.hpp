#pragma once
// The task: what a candidate must compute. A task is a chain of ops applied to a running value that starts
// at inputs[0]; ops may read further inputs ("side inputs": weights, biases, a second operand) by name.
// The chain form keeps fusion boundaries simple (a group is a contiguous range of ops) and still covers
// elementwise chains, row reductions, softmax, norms and GEMM with epilogues. It travels in prompts, so it
// is part of the wire schema.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <msgpack.hpp>

namespace crucible {

/// One input tensor: its shape, dtype and how its values are drawn.
struct tensor_spec {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "float32";  ///< float32 | float16 | bfloat16 | float64 | int32 | int64 | bool
  std::string dist = "normal";    ///< normal | uniform | heavy_tailed | positive | kernelbench (get_inputs())
  double lo = -1.0;               ///< uniform range
  double hi = 1.0;
  double scale = 1.0;  ///< standard deviation (normal), or scale of the heavy tail
  bool param = false;  ///< a parameter (weight, bias) rather than an activation
  MSGPACK_DEFINE_MAP(name, shape, dtype, dist, lo, hi, scale, param);
};

/// One op of the chain. `args` name side inputs; `attrs` hold scalars (s, lo, hi, alpha, eps).
struct op_spec {
  std::string op;
  std::vector<std::string> args;
  std::map<std::string, double> attrs;
  MSGPACK_DEFINE_MAP(op, args, attrs);
};

struct task_spec {
  std::string name;
  std::string family;  ///< elementwise | reduction | softmax | norm | gemm | ...
  std::string description;
  std::vector<tensor_spec> inputs;  ///< inputs[0] starts the chain
  std::vector<op_spec> ops;
  double atol = -1.0;  ///< < 0: the dtype's default tolerance
  double rtol = -1.0;
  std::vector<std::string> targets = {"cpu"};
  /// A KernelBench task: the reference module's Python source (`Model`, get_inputs, get_init_inputs), which
  /// replaces the chain (ops stay empty; inputs describe what get_inputs draws). Empty for a chain.
  std::string module;
  MSGPACK_DEFINE_MAP(name, family, description, inputs, ops, atol, rtol, targets, module);
};

}  // namespace crucible
