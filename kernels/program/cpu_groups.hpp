#pragma once
// The CPU emitter's per-kind group emitters (one .cpp each: cpu_elementwise.cpp, cpu_row.cpp,
// cpu_gemm.cpp, cpu_gemv.cpp). Each writes one function
//   static void g<i>(const float* const* X, const float* __restrict in, float* __restrict out,
//                    float* __restrict ws)
// X: every task input (side inputs are read through it), in: the running value before the group (a task
// input or an intermediate), out: the value after it (an intermediate or the output; never aliases in),
// ws: scratch_floats floats of scratch, valid for this call only.
#include <cstdint>
#include <string>

#include "kernels/program/program.hpp"
#include "kernels/program/rewritten_chain.hpp"

namespace crucible::kernels {

struct cpu_group_ctx {
  const task_spec& task;
  const rewritten_chain& chain;
  const group_plan& plan;
  std::string fn;  ///< the function's name

  bool poly() const;
  /// An integer knob (0 when absent: validated programs always carry their knobs).
  int knob(const std::string& name) const;
  const shape_t& in_shape() const { return chain.before(plan.first); }
  const shape_t& out_shape() const { return chain.after[plan.last]; }
  /// The function's first line, up to and including '{'.
  std::string signature() const;
};

struct cpu_group_code {
  std::string code;
  int64_t scratch_floats = 0;
  bool uses_blas = false;
  bool uses_vector_types = false;  ///< needs the cru_v8 typedef (tiled GEMM)
};

cpu_group_code emit_elementwise_group(const cpu_group_ctx& g);
cpu_group_code emit_row_group(const cpu_group_ctx& g);
cpu_group_code emit_gemm_group(const cpu_group_ctx& g);
cpu_group_code emit_gemv_group(const cpu_group_ctx& g);

}  // namespace crucible::kernels
