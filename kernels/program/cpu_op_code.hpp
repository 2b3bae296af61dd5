#pragma once
// C++ statements for the elementwise ops of a rewritten chain, as the CPU group emitters inline them into
// their loops: the running value is a float variable, side inputs are `t<input index>` pointers, and each
// group emitter says how to index them (the element's flat index in the running tensor, and its index
// along the last dim for row-vector operands).
#include <string>

#include "kernels/program/rewritten_chain.hpp"

namespace crucible::kernels {

/// Where the statements run: the variable they transform and the index expressions in scope.
struct ew_env {
  std::string var = "v";  ///< the running value (a float lvalue)
  std::string flat;       ///< flat index of the element in the running tensor
  std::string col;        ///< its index along the running tensor's last dim
  bool poly = false;      ///< math=poly
};

/// Statements applying ops [first, last] (all elementwise) of `chain` to env.var, one per line.
std::string ew_statements(const rewritten_chain& chain, const task_spec& task, int first, int last,
                          const ew_env& env);

/// Whether ops [first, last] read a side input broadcast along rows (so env.col must be meaningful).
bool reads_row_vector(const rewritten_chain& chain, const task_spec& task, int first, int last);

/// "const float* __restrict t<k> = X[k];" for every side input ops [first, last] read (matmul weights and
/// _matmul_rowsum operands included).
std::string side_input_decls(const rewritten_chain& chain, const task_spec& task, int first, int last);

/// The pointer name of a side input in emitted code.
std::string side_name(const task_spec& task, const std::string& input_name);

}  // namespace crucible::kernels
