#include "kernels/program/group_kinds.hpp"

namespace crucible::kernels {
namespace {

const knob_slot& knob(std::string_view name, std::string_view target) {
  for (const auto& k : all_knobs(target))
    if (k.name == name) return k;
  return all_knobs("cpu").front();  // unreachable: names below are all in the table
}

knob_slot math_knob(const rewritten_chain& c, int first, int last, std::string_view target) {
  if (target == "cuda") {
    for (int i = first; i <= last; ++i)
      if (cuda_op_transcendental(c.ops[i])) return knob("math", target);
    return knob_slot{"math", {"accurate"}};
  }
  for (int i = first; i <= last; ++i)
    if (uses_transcendental(c.ops[i])) return knob("math", target);
  return knob_slot{"math", {"libm"}};
}

int core_op(const rewritten_chain& c, int first, int last) {
  for (int i = first; i <= last; ++i)
    if (!is_elementwise(c.ops[i])) return i;
  return -1;
}

group_kind kind_of_core(chain_op_kind k) {
  switch (k) {
    case chain_op_kind::elementwise:
      return group_kind::elementwise;
    case chain_op_kind::row_reduce:
    case chain_op_kind::row_norm:
      return group_kind::row;
    case chain_op_kind::gemm:
      return group_kind::gemm;
    case chain_op_kind::gemv:
      return group_kind::gemv;
    case chain_op_kind::dim_reduce:
      return group_kind::dim_reduce;
    case chain_op_kind::scan:
      return group_kind::scan;
    case chain_op_kind::conv:
      return group_kind::conv;
    case chain_op_kind::pool:
      return group_kind::pool;
    case chain_op_kind::channel_norm:
      return group_kind::channel_norm;
    case chain_op_kind::loss:
      return group_kind::loss;
    case chain_op_kind::bmm:
      return group_kind::bmm;
    case chain_op_kind::attention:
      return group_kind::attention;
  }
  return group_kind::elementwise;
}

bool cuda_can_fuse(const rewritten_chain& c, int first, int next) {
  const group_kind so_far = group_kind_of(c, first, next - 1);
  switch (kind_of(c.ops[next])) {
    case chain_op_kind::elementwise:
      return so_far != group_kind::loss;  // an epilogue of any kind but a loss (its output is a scalar)
    case chain_op_kind::row_reduce:
    case chain_op_kind::row_norm:
    case chain_op_kind::channel_norm:
    case chain_op_kind::dim_reduce:
    case chain_op_kind::scan:
    case chain_op_kind::loss:
      return so_far == group_kind::elementwise;  // after an elementwise prologue
    default:
      return false;  // gemm, gemv, bmm, attention, conv, pool: only ever a head
  }
}

}  // namespace

const char* to_string(group_kind k) {
  switch (k) {
    case group_kind::elementwise:
      return "elementwise";
    case group_kind::row:
      return "row";
    case group_kind::gemm:
      return "gemm";
    case group_kind::gemv:
      return "gemv";
    case group_kind::bmm:
      return "bmm";
    case group_kind::attention:
      return "attention";
    case group_kind::conv:
      return "conv";
    case group_kind::pool:
      return "pool";
    case group_kind::channel_norm:
      return "channel_norm";
    case group_kind::dim_reduce:
      return "dim_reduce";
    case group_kind::scan:
      return "scan";
    case group_kind::loss:
      return "loss";
  }
  return "?";
}

group_kind group_kind_of(const rewritten_chain& c, int first, int last) {
  const int core = core_op(c, first, last);
  return core < 0 ? group_kind::elementwise : kind_of_core(kind_of(c.ops[core]));
}

bool can_fuse(const rewritten_chain& c, int first, int next, std::string_view target) {
  if (target == "cuda") return cuda_can_fuse(c, first, next);
  switch (kind_of(c.ops[next])) {
    case chain_op_kind::elementwise:
      return true;  // an epilogue (or prologue) of any kind
    case chain_op_kind::row_reduce:
    case chain_op_kind::row_norm:
      return group_kind_of(c, first, next - 1) == group_kind::elementwise;
    default:
      return false;  // gemm, gemv: only ever a head
  }
}

const std::vector<std::pair<group_kind, std::vector<std::string>>>& all_strategies(std::string_view target) {
  static const std::vector<std::pair<group_kind, std::vector<std::string>>> cpu = {
      {group_kind::elementwise, {"loop", "simd"}},
      {group_kind::row, {"multi_pass", "fused_pass", "online"}},
      {group_kind::gemm, {"blas", "tiled", "naive"}},
      {group_kind::gemv, {"dot", "simd"}},
  };
  static const std::vector<std::pair<group_kind, std::vector<std::string>>> cuda = {
      {group_kind::elementwise, {"grid", "vec4"}},
      {group_kind::row, {"block", "warp", "online"}},
      {group_kind::gemm, {"cublas", "tiled"}},
      {group_kind::gemv, {"warp_dot", "block_dot"}},
      {group_kind::bmm, {"cublas", "tiled"}},
      {group_kind::attention, {"library", "flash"}},
      {group_kind::conv, {"cudnn", "im2col_gemm", "direct"}},
      {group_kind::pool, {"direct"}},
      {group_kind::channel_norm, {"two_pass", "fused"}},
      {group_kind::dim_reduce, {"direct", "block"}},
      {group_kind::scan, {"block_scan"}},
      {group_kind::loss, {"two_stage", "atomic"}},
  };
  static const std::vector<std::pair<group_kind, std::vector<std::string>>> none;
  return target == "cpu" ? cpu : target == "cuda" ? cuda : none;
}

const std::vector<knob_slot>& all_knobs(std::string_view target) {
  static const std::vector<knob_slot> cpu = {
      {"unroll", {"1", "2", "4"}},        {"math", {"libm", "poly"}}, {"acc", {"1", "4", "8"}},
      {"block_rows", {"0", "32", "128"}}, {"tile", {"32", "64"}},
  };
  static const std::vector<knob_slot> cuda = {
      {"threads", {"256", "128", "512"}},
      {"math", {"accurate", "fast"}},
      {"tile", {"64", "32"}},
  };
  static const std::vector<knob_slot> none;
  return target == "cpu" ? cpu : target == "cuda" ? cuda : none;
}

std::vector<std::string> group_strategies(const rewritten_chain& c, int first, int last,
                                          std::string_view target) {
  const group_kind kind = group_kind_of(c, first, last);
  if (kind == group_kind::row) {
    const std::string& op = c.ops[core_op(c, first, last)].op;
    const bool online = op == "softmax" || op == "log_softmax" || op == "layer_norm";
    if (target == "cuda")
      return online ? std::vector<std::string>{"block", "warp", "online"}
                    : std::vector<std::string>{"block", "warp"};
    return online ? std::vector<std::string>{"multi_pass", "fused_pass", "online"}
                  : std::vector<std::string>{"multi_pass", "fused_pass"};
  }
  for (const auto& [k, strategies] : all_strategies(target))
    if (k == kind) return strategies;
  return {};
}

std::vector<knob_slot> group_knobs(const rewritten_chain& c, int first, int last, std::string_view strategy,
                                   std::string_view target) {
  const knob_slot math = math_knob(c, first, last, target);
  const group_kind kind = group_kind_of(c, first, last);
  if (target == "cuda") {
    switch (kind) {
      case group_kind::elementwise:
      case group_kind::row:
      case group_kind::pool:
        return {knob("threads", target), math};
      case group_kind::gemm:
        if (strategy == "tiled") return {knob("tile", target), math};
        return {math};
      default:
        return {math};
    }
  }
  switch (kind) {
    case group_kind::elementwise:
      return {knob("unroll", target), math};
    case group_kind::row:
      return {knob("acc", target), math};
    case group_kind::gemm:
      if (strategy == "blas") return {knob("block_rows", target), math};
      if (strategy == "tiled") return {knob("tile", target), math};
      return {math};
    case group_kind::gemv:
      if (strategy == "simd") return {knob("acc", target), math};
      return {math};
    default:
      return {math};
  }
}

bool cuda_op_transcendental(const chain_op& op) {
  if (uses_transcendental(op)) return true;
  static const char* const names[] = {"elu",        "selu",          "mish",       "layer_norm",
                                      "rms_norm",   "attention",     "batch_norm", "instance_norm",
                                      "group_norm", "cross_entropy", "kl_div",     "cosine_loss"};
  for (const char* n : names)
    if (op.op == n) return true;
  return false;
}

}  // namespace crucible::kernels
