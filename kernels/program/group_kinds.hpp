#pragma once
// Groups: contiguous op ranges of the rewritten chain fused into one kernel, and what each kind admits.
// The kind follows from the ops a group holds:
//   elementwise  unary/scalar/binary ops only
//   row          an elementwise prologue, exactly one row_reduce or row_norm, an elementwise epilogue
//                (after a row_reduce the epilogue runs on the [rows] vector)
//   gemm         matmul + elementwise epilogue
//   gemv         _matmul_rowsum + elementwise epilogue (on the [rows] vector)
// Strategies (baseline first) and their knobs, in decision order:
//   elementwise  loop | simd                      unroll {1,2,4}, math
//   row          multi_pass | fused_pass | online acc {1,4,8}, math   (online: softmax, log_softmax,
//                                                                       layer_norm only)
//   gemm         blas: block_rows {0,32,128}, math; tiled: tile {32,64}, math; naive: math
//   gemv         dot (double accumulation): math; simd (float, partial sums): acc {1,4,8}, math
// math is {libm, poly} when some op of the group evaluates exp/tanh/erf/log1p, else {libm}: a knob with one
// legal option is still a decision, so every strategy has a fixed knob list.
#include <string>
#include <string_view>
#include <vector>

#include "kernels/program/rewritten_chain.hpp"

namespace crucible::kernels {

enum class group_kind { elementwise, row, gemm, gemv };
const char* to_string(group_kind k);

/// Kind of the group of ops [first, last]. Precondition: the range is a legal group.
group_kind group_kind_of(const rewritten_chain& chain, int first, int last);

/// Whether op `next` may join the group [first, next-1]: what the CPU emitter can fuse.
bool can_fuse(const rewritten_chain& chain, int first, int next);

/// A knob and its legal options (first = default).
struct knob_slot {
  std::string name;
  std::vector<std::string> options;
};

/// Legal strategies of the group, baseline first.
std::vector<std::string> group_strategies(const rewritten_chain& chain, int first, int last);

/// The knobs of `strategy` for the group, in decision order.
std::vector<knob_slot> group_knobs(const rewritten_chain& chain, int first, int last,
                                   std::string_view strategy);

/// Every strategy of every kind, and every knob with all its options (the vocabulary's source).
const std::vector<std::pair<group_kind, std::vector<std::string>>>& all_strategies();
const std::vector<knob_slot>& all_knobs();

}  // namespace crucible::kernels
