#include "kernels/program/group_kinds.hpp"

namespace crucible::kernels {
namespace {

const knob_slot& knob(std::string_view name) {
  for (const auto& k : all_knobs())
    if (k.name == name) return k;
  return all_knobs().front();  // unreachable: names below are all in the table
}

knob_slot math_knob(const rewritten_chain& c, int first, int last) {
  for (int i = first; i <= last; ++i)
    if (uses_transcendental(c.ops[i])) return knob("math");
  return knob_slot{"math", {"libm"}};
}

const chain_op* row_op(const rewritten_chain& c, int first, int last) {
  for (int i = first; i <= last; ++i) {
    auto k = kind_of(c.ops[i]);
    if (k == chain_op_kind::row_reduce || k == chain_op_kind::row_norm) return &c.ops[i];
  }
  return nullptr;
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
  }
  return "?";
}

group_kind group_kind_of(const rewritten_chain& c, int first, int last) {
  auto head = kind_of(c.ops[first]);
  if (head == chain_op_kind::gemm) return group_kind::gemm;
  if (head == chain_op_kind::gemv) return group_kind::gemv;
  return row_op(c, first, last) ? group_kind::row : group_kind::elementwise;
}

bool can_fuse(const rewritten_chain& c, int first, int next) {
  switch (kind_of(c.ops[next])) {
    case chain_op_kind::elementwise:
      return true;  // an epilogue (or prologue) of any kind
    case chain_op_kind::row_reduce:
    case chain_op_kind::row_norm:
      return group_kind_of(c, first, next - 1) == group_kind::elementwise;
    case chain_op_kind::gemm:
    case chain_op_kind::gemv:
      return false;  // only ever a head
  }
  return false;
}

const std::vector<std::pair<group_kind, std::vector<std::string>>>& all_strategies() {
  static const std::vector<std::pair<group_kind, std::vector<std::string>>> all = {
      {group_kind::elementwise, {"loop", "simd"}},
      {group_kind::row, {"multi_pass", "fused_pass", "online"}},
      {group_kind::gemm, {"blas", "tiled", "naive"}},
      {group_kind::gemv, {"dot", "simd"}},
  };
  return all;
}

const std::vector<knob_slot>& all_knobs() {
  static const std::vector<knob_slot> all = {
      {"unroll", {"1", "2", "4"}},        {"math", {"libm", "poly"}}, {"acc", {"1", "4", "8"}},
      {"block_rows", {"0", "32", "128"}}, {"tile", {"32", "64"}},
  };
  return all;
}

std::vector<std::string> group_strategies(const rewritten_chain& c, int first, int last) {
  switch (group_kind_of(c, first, last)) {
    case group_kind::elementwise:
      return {"loop", "simd"};
    case group_kind::row: {
      const std::string& op = row_op(c, first, last)->op;
      if (op == "softmax" || op == "log_softmax" || op == "layer_norm")
        return {"multi_pass", "fused_pass", "online"};
      return {"multi_pass", "fused_pass"};
    }
    case group_kind::gemm:
      return {"blas", "tiled", "naive"};
    case group_kind::gemv:
      return {"dot", "simd"};
  }
  return {};
}

std::vector<knob_slot> group_knobs(const rewritten_chain& c, int first, int last, std::string_view strategy) {
  switch (group_kind_of(c, first, last)) {
    case group_kind::elementwise:
      return {knob("unroll"), math_knob(c, first, last)};
    case group_kind::row:
      return {knob("acc"), math_knob(c, first, last)};
    case group_kind::gemm:
      if (strategy == "blas") return {knob("block_rows"), math_knob(c, first, last)};
      if (strategy == "tiled") return {knob("tile"), math_knob(c, first, last)};
      return {math_knob(c, first, last)};
    case group_kind::gemv:
      if (strategy == "simd") return {knob("acc"), math_knob(c, first, last)};
      return {math_knob(c, first, last)};
  }
  return {};
}

}  // namespace crucible::kernels
