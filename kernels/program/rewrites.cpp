#include "kernels/program/rewrites.hpp"

#include <algorithm>

namespace crucible::kernels {
namespace {

bool is(const chain_op& op, std::string_view name) {
  return op.op == name;
}

bool is_scalar_affine(const chain_op& op) {
  return is(op, "mul_scalar") || is(op, "add_scalar") || is(op, affine_op);
}

// Output >= 0 for every input (NaN aside): relu/abs after it is the identity.
bool nonneg_output(const chain_op& op) {
  for (const char* n : {"relu", "abs", "exp", "sigmoid", "square", "softplus", "softmax"})
    if (is(op, n)) return true;
  return false;
}

// Non-decreasing as evaluated in float (rounding preserves order), so f(max v) == max f(v) exactly.
bool non_decreasing(const chain_op& op) {
  for (const char* n : {"relu", "sigmoid", "tanh", "exp", "clamp", "softplus", "add_scalar"})
    if (is(op, n)) return true;
  if (is(op, "leaky_relu")) return attr_of(op, "alpha") >= 0;
  if (is(op, "mul_scalar")) return attr_of(op, "s") > 0;
  if (is(op, affine_op)) return attr_of(op, "a") > 0;
  return false;
}

// --- drop_redundant ---
bool drop_redundant(rewritten_chain& c, const task_spec& task) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 1; i < c.ops.size() && !again; ++i) {
      if ((is(c.ops[i], "relu") || is(c.ops[i], "abs")) && nonneg_output(c.ops[i - 1])) {
        c.ops.erase(c.ops.begin() + i);
        again = true;
      } else if (is(c.ops[i], "neg") && is(c.ops[i - 1], "neg") && c.ops.size() > 2) {
        c.ops.erase(c.ops.begin() + i - 1, c.ops.begin() + i + 1);
        again = true;
      }
    }
    changed |= again;
  }
  if (changed) recompute_shapes(c, task);
  return changed;
}

// --- max_through_monotone ---
bool max_through_monotone(rewritten_chain& c, const task_spec& task) {
  bool changed = false;
  for (size_t i = 0; i < c.ops.size(); ++i) {
    if (!is(c.ops[i], "row_max")) continue;
    size_t j = i;
    while (j > 0 && non_decreasing(c.ops[j - 1])) --j;
    if (j == i) continue;
    std::rotate(c.ops.begin() + j, c.ops.begin() + i, c.ops.begin() + i + 1);
    changed = true;
  }
  if (changed) recompute_shapes(c, task);
  return changed;
}

// --- sum_through_affine ---
bool sum_through_affine(rewritten_chain& c, const task_spec& task) {
  bool changed = false;
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const bool sum = is(c.ops[i], "row_sum");
    if (!sum && !is(c.ops[i], "row_mean")) continue;
    size_t j = i;
    while (j > 0 && is_scalar_affine(c.ops[j - 1])) --j;
    if (j == i) continue;
    // sum_c (a v_c + b) = a sum_c v_c + C b; the mean keeps b as is.
    const double len = static_cast<double>(c.before(i).back());
    for (size_t k = j; k < i && sum; ++k) {
      auto& op = c.ops[k];
      if (is(op, "add_scalar")) op.attrs["s"] = attr_of(op, "s") * len;
      if (is(op, affine_op)) op.attrs["b"] = attr_of(op, "b") * len;
    }
    std::rotate(c.ops.begin() + j, c.ops.begin() + i, c.ops.begin() + i + 1);
    changed = true;
  }
  if (changed) recompute_shapes(c, task);
  return changed;
}

// --- gemm_rowsum_to_gemv ---
bool gemv_linear(const chain_op& op, const task_spec& task, int64_t n) {
  if (is_scalar_affine(op)) return true;
  if (is(op, "add") || is(op, "sub") || is(op, "mul")) return input_shape(task, op.args[0]) == shape_t{n};
  return false;
}

bool gemm_rowsum_to_gemv(rewritten_chain& c, const task_spec& task) {
  bool changed = false;
  for (size_t i = 0; i < c.ops.size(); ++i) {
    if (!is(c.ops[i], "matmul")) continue;
    const int64_t n = c.after[i].back();
    size_t j = i + 1;
    while (j < c.ops.size() && gemv_linear(c.ops[j], task, n)) ++j;
    if (j == c.ops.size() || !(is(c.ops[j], "row_sum") || is(c.ops[j], "row_mean"))) continue;
    chain_op g;
    g.op = std::string(matmul_rowsum_op);
    g.args = c.ops[i].args;
    g.attrs["mean"] = is(c.ops[j], "row_mean") ? 1.0 : 0.0;
    for (size_t k = i + 1; k < j; ++k)
      g.linear.push_back(op_spec{c.ops[k].op, c.ops[k].args, c.ops[k].attrs});
    c.ops.erase(c.ops.begin() + i + 1, c.ops.begin() + j + 1);
    c.ops[i] = std::move(g);
    changed = true;
  }
  if (changed) recompute_shapes(c, task);
  return changed;
}

// --- fold_scalars ---
bool fold_scalars(rewritten_chain& c, const task_spec& task) {
  bool changed = false;
  for (size_t i = 0; i < c.ops.size(); ++i) {
    size_t j = i;
    while (j < c.ops.size() && is_scalar_affine(c.ops[j])) ++j;
    if (j - i < 2) continue;
    double a = 1.0, b = 0.0;
    for (size_t k = i; k < j; ++k) {
      const auto& op = c.ops[k];
      if (is(op, "mul_scalar")) {
        a *= attr_of(op, "s");
        b *= attr_of(op, "s");
      } else if (is(op, "add_scalar")) {
        b += attr_of(op, "s");
      } else {
        b = b * attr_of(op, "a") + attr_of(op, "b");
        a *= attr_of(op, "a");
      }
    }
    chain_op f{std::string(affine_op), {}, {{"a", a}, {"b", b}}, {}};
    c.ops.erase(c.ops.begin() + i + 1, c.ops.begin() + j);
    c.ops[i] = std::move(f);
    changed = true;
  }
  if (changed) recompute_shapes(c, task);
  return changed;
}

template <bool (*F)(rewritten_chain&, const task_spec&)>
bool matches(const rewritten_chain& c, const task_spec& task) {
  rewritten_chain copy = c;
  return F(copy, task);
}

template <bool (*F)(rewritten_chain&, const task_spec&)>
void apply(rewritten_chain& c, const task_spec& task) {
  F(c, task);
}

template <bool (*F)(rewritten_chain&, const task_spec&)>
rewrite_info make(const char* name, const char* summary) {
  return rewrite_info{name, summary, &matches<F>, &apply<F>};
}

}  // namespace

const std::vector<rewrite_info>& rewrite_catalog() {
  static const std::vector<rewrite_info> all = {
      make<drop_redundant>("drop_redundant", "drop relu/abs of a non-negative value and neg,neg pairs"),
      make<max_through_monotone>("max_through_monotone", "row_max before a run of non-decreasing ops"),
      make<sum_through_affine>("sum_through_affine", "row_sum/row_mean before a run of scalar affine ops"),
      make<gemm_rowsum_to_gemv>("gemm_rowsum_to_gemv", "row sum of x·W (+ linear ops) as x·(W·a) + c"),
      make<fold_scalars>("fold_scalars", "a run of scalar multiply/adds as one v*a + b"),
  };
  return all;
}

const rewrite_info* find_rewrite(std::string_view name) {
  for (const auto& r : rewrite_catalog())
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace crucible::kernels
