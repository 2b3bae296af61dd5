#pragma once
// Groups: contiguous op ranges of the rewritten chain fused into one kernel (or one library call and its
// epilogue kernel), and what each kind admits on each target. The kind follows from the group's core op,
// its first non-elementwise op (none: elementwise).
//
// CPU ("cpu"):
//   elementwise  unary/scalar/binary ops only
//   row          an elementwise prologue, exactly one row_reduce or row_norm, an elementwise epilogue
//                (after a row_reduce the epilogue runs on the [rows] vector)
//   gemm         matmul + elementwise epilogue
//   gemv         _matmul_rowsum + elementwise epilogue (on the [rows] vector)
//   Strategies (baseline first) and their knobs, in decision order:
//   elementwise  loop | simd                      unroll {1,2,4}, math
//   row          multi_pass | fused_pass | online acc {1,4,8}, math   (online: softmax, log_softmax,
//                                                                       layer_norm only)
//   gemm         blas: block_rows {0,32,128}, math; tiled: tile {32,64}, math; naive: math
//   gemv         dot (double accumulation): math; simd (float, partial sums): acc {1,4,8}, math
//   math is {libm, poly} when some op of the group evaluates exp/tanh/erf/log1p, else {libm}.
//
// CUDA ("cuda"): the CPU kinds plus bmm, attention, conv, pool (head + epilogue), channel_norm,
// dim_reduce, scan (elementwise prologue + core + epilogue) and loss (prologue + core; the output is a
// scalar, so no epilogue).
//   elementwise  grid | vec4                      threads {256,128,512}, math
//   row          block | warp | online            threads, math (online: softmax, log_softmax, layer_norm)
//   gemm         cublas: math; tiled: tile {64,32}, math
//   gemv         warp_dot | block_dot             math
//   bmm          cublas | tiled                   math
//   attention    library | flash                  math
//   conv         cudnn | im2col_gemm | direct     math
//   pool         direct                           threads, math
//   channel_norm two_pass | fused                 math
//   dim_reduce   direct | block                   math
//   scan         block_scan                       math
//   loss         two_stage | atomic               math
//   math is {accurate, fast} when some op of the group evaluates a transcendental, else {accurate}.
// A knob with one legal option is still a decision, so every strategy has a fixed knob list.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/program/rewritten_chain.hpp"

namespace crucible::kernels {

enum class group_kind {
  elementwise,
  row,
  gemm,
  gemv,
  bmm,
  attention,
  conv,
  pool,
  channel_norm,
  dim_reduce,
  scan,
  loss
};
const char* to_string(group_kind k);

/// Kind of the group of ops [first, last]. Precondition: the range is a legal group.
group_kind group_kind_of(const rewritten_chain& chain, int first, int last);

/// Whether op `next` may join the group [first, next-1]: what the target's emitter can fuse.
bool can_fuse(const rewritten_chain& chain, int first, int next, std::string_view target = "cpu");

/// A knob and its legal options (first = default).
struct knob_slot {
  std::string name;
  std::vector<std::string> options;
};

/// Legal strategies of the group, baseline first.
std::vector<std::string> group_strategies(const rewritten_chain& chain, int first, int last,
                                          std::string_view target = "cpu");

/// The knobs of `strategy` for the group, in decision order.
std::vector<knob_slot> group_knobs(const rewritten_chain& chain, int first, int last,
                                   std::string_view strategy, std::string_view target = "cpu");

/// Every strategy of every kind, and every knob with all its options, of a target (the vocabulary's
/// source); empty for an unknown target.
const std::vector<std::pair<group_kind, std::vector<std::string>>>& all_strategies(
    std::string_view target = "cpu");
const std::vector<knob_slot>& all_knobs(std::string_view target = "cpu");

/// Whether the op evaluates exp/log/tanh/erf/rsqrt-like functions on CUDA (math=fast can change it).
bool cuda_op_transcendental(const chain_op& op);

}  // namespace crucible::kernels
