#include "policies/program_tokenizer.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/program/program_space.hpp"
#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::policies {
namespace {

using kernels::op_class;

constexpr int32_t n_size_buckets = 32;  // log2 buckets of a dim: 0 (1) .. 31 (>= 2^31)
constexpr int32_t max_rank = 8;

const char* const dtypes[] = {"float32", "float16", "bfloat16", "float64", "int32", "int64", "bool"};
const char* const side_kinds[] = {"full", "row", "matrix", "other"};
const char* const value_classes[] = {"neg_one", "neg", "zero", "small", "one", "large"};
const op_class all_classes[] = {op_class::unary,      op_class::scalar,   op_class::binary,
                                op_class::row_reduce, op_class::row_norm, op_class::gemm};

int32_t size_bucket(int64_t x) {
  if (x <= 1) return 0;
  int32_t b = 0;
  while (b + 1 < n_size_buckets && (int64_t{1} << (b + 1)) <= x) ++b;
  return b;
}

const char* value_class(double v) {
  if (v == -1.0) return "neg_one";
  if (v < 0) return "neg";
  if (v == 0) return "zero";
  if (v < 1) return "small";
  if (v == 1) return "one";
  return "large";
}

uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= 0xff;  // separator, so "ab","c" != "a","bc"
  return h * 1099511628211ull;
}

}  // namespace

program_tokenizer::program_tokenizer(std::string_view target) : target_(target) {
  for (const char* s : {"<pad>", "<bos>", "<task>", "<exemplar>", "<program>", "<end>", "<unk>"}) add(s);
  for (const auto& op : kernels::op_catalog()) add("op:" + op.name);
  for (op_class c : all_classes) add(std::string("class:") + kernels::to_string(c));
  for (const char* d : dtypes) add(std::string("dtype:") + d);
  for (int32_t r = 0; r <= max_rank; ++r) add("rank:" + std::to_string(r));
  for (int32_t b = 0; b < n_size_buckets; ++b) add("rows:" + std::to_string(b));
  for (int32_t b = 0; b < n_size_buckets; ++b) add("cols:" + std::to_string(b));
  for (const char* k : side_kinds) add(std::string("side:") + k);
  {
    std::vector<std::string> attrs;
    for (const auto& op : kernels::op_catalog())
      for (const auto& a : op.attrs)
        if (std::find(attrs.begin(), attrs.end(), a.name) == attrs.end()) attrs.push_back(a.name);
    for (const auto& a : attrs) add("attr:" + a);
  }
  for (const char* v : value_classes) add(std::string("val:") + v);
  first_bucket_ = size();
  for (int32_t b = 0; b < n_buckets; ++b) add("bucket:" + std::to_string(b));
  const auto& vocab = kernels::vocabulary(target);
  for (const auto& s : vocab.slots) add(s);
  for (const auto& c : vocab.choices) {
    // A choice string could in principle coincide with an earlier token; keep ids unique regardless.
    if (index_.count(c)) continue;
    is_choice_[add(c)] = true;
  }
  fingerprint_ = 14695981039346656037ull;
  for (const auto& t : tokens_) fingerprint_ = fnv1a(fingerprint_, t);
}

int32_t program_tokenizer::add(std::string token) {
  auto it = index_.find(token);
  if (it != index_.end()) return it->second;
  int32_t i = size();
  index_.emplace(token, i);
  tokens_.push_back(std::move(token));
  is_choice_.push_back(false);
  return i;
}

int32_t program_tokenizer::id(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? -1 : it->second;
}

const std::string& program_tokenizer::token(int32_t i) const {
  static const std::string bad = "<bad>";
  return i >= 0 && i < size() ? tokens_[i] : bad;
}

int32_t program_tokenizer::choice_id(std::string_view slot, std::string_view option) const {
  std::string s(slot);
  s += '=';
  s += option;
  int32_t i = id(s);
  return i >= 0 && is_choice(i) ? i : -1;
}

bool program_tokenizer::is_choice(int32_t i) const {
  return i >= 0 && i < static_cast<int32_t>(is_choice_.size()) && is_choice_[i];
}

int32_t program_tokenizer::bucket_token(int32_t b) const {
  return first_bucket_ + std::clamp<int32_t>(b, 0, n_buckets - 1);
}

std::vector<int32_t> program_tokenizer::encode_task(const task_spec& t) const {
  std::vector<int32_t> out;
  auto push = [&](const std::string& s) {
    int32_t i = id(s);
    out.push_back(i >= 0 ? i : unk_id);
  };
  auto push_shape = [&](const kernels::shape_t& s) {
    push("rank:" + std::to_string(std::min<size_t>(s.size(), max_rank)));
    int64_t cols = s.empty() ? 1 : s.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < s.size(); ++i) rows *= s[i];
    push("rows:" + std::to_string(size_bucket(rows)));
    push("cols:" + std::to_string(size_bucket(cols)));
  };
  if (!t.inputs.empty()) push("dtype:" + t.inputs[0].dtype);
  auto shapes = kernels::infer_shapes(t);
  if (shapes) push_shape(shapes->input);
  kernels::shape_t running = shapes ? shapes->input : kernels::shape_t{};
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const auto& op = t.ops[i];
    const kernels::op_info* info = kernels::find_op(op.op);
    if (!info) {
      out.push_back(unk_id);
      continue;
    }
    push("op:" + op.op);
    push(std::string("class:") + kernels::to_string(info->cls));
    for (const auto& arg : op.args) {
      const char* kind = "other";
      int idx = kernels::input_index(t, arg);
      if (shapes && idx >= 0) {
        const auto& s = t.inputs[idx].shape;
        if (info->cls == op_class::gemm && s.size() == 2)
          kind = "matrix";
        else if (s == running)
          kind = "full";
        else if (s.size() == 1 && !running.empty() && s[0] == running.back())
          kind = "row";
      }
      push(std::string("side:") + kind);
    }
    for (const auto& a : info->attrs) {
      push("attr:" + a.name);
      push(std::string("val:") + value_class(kernels::op_attr(op, a.name)));
    }
    if (shapes) {
      const auto& next = shapes->after[i];
      if (next != running) push_shape(next);
      running = next;
    }
  }
  return out;
}

expected<std::vector<int32_t>> program_tokenizer::encode_program(const task_spec& t,
                                                                 const kernels::program& p) const {
  auto decisions = kernels::decisions_of(t, p, target_);
  if (!decisions) return decisions.err();
  std::vector<int32_t> out;
  out.reserve(decisions->size() * 2);
  for (const auto& [d, option] : *decisions) {
    int32_t s = slot_id(d.slot);
    int32_t c = choice_id(d.slot, option);
    if (s < 0 || c < 0)
      return make_error("program token '" + d.slot + "=" + option + "' is not in the " + target_ +
                        " vocabulary (kernels::vocabulary is out of step with the program space)");
    out.push_back(s);
    out.push_back(c);
  }
  return out;
}

std::vector<int32_t> program_tokenizer::encode_exemplar(const task_spec& t, const exemplar& e) const {
  auto parsed = kernels::parse_program(e.program);
  if (!parsed) return {};
  auto prog = encode_program(t, *parsed);
  if (!prog) return {};
  std::vector<int32_t> out;
  out.reserve(prog->size() + 2);
  out.push_back(exemplar_id);
  out.push_back(bucket_token(e.bucket));
  out.insert(out.end(), prog->begin(), prog->end());
  return out;
}

expected<std::vector<int32_t>> program_tokenizer::encode_prompt(const prompt& p, int32_t max_tokens) const {
  if (max_tokens < 3)
    return make_error("prompt budget of " + std::to_string(max_tokens) +
                      " tokens cannot hold [BOS] [TASK] [PROGRAM]; raise policy.max_context");
  std::vector<int32_t> task_tokens = encode_task(p.task);
  std::vector<std::vector<int32_t>> ex;
  for (const auto& e : p.exemplars) {
    auto toks = encode_exemplar(p.task, e);
    if (!toks.empty()) ex.push_back(std::move(toks));
  }
  const size_t budget = static_cast<size_t>(max_tokens);
  const size_t fixed = 3;  // [BOS] [TASK] ... [PROGRAM]
  auto total = [&] {
    size_t n = fixed + task_tokens.size();
    for (const auto& e : ex) n += e.size();
    return n;
  };
  // Drop whole exemplars from the back; cut the last one short when that suffices (an exemplar needs at
  // least its marker, its bucket and one decision to say anything).
  while (!ex.empty() && total() > budget) {
    size_t over = total() - budget;
    auto& last = ex.back();
    if (last.size() >= over + 4) {
      size_t keep = last.size() - over;
      keep -= (keep - 2) % 2;  // whole decisions only
      last.resize(keep);
      if (total() <= budget) break;
    }
    ex.pop_back();
  }
  if (total() > budget) task_tokens.resize(budget - fixed);
  std::vector<int32_t> out;
  out.reserve(total());
  out.push_back(bos_id);
  out.push_back(task_id);
  out.insert(out.end(), task_tokens.begin(), task_tokens.end());
  for (const auto& e : ex) out.insert(out.end(), e.begin(), e.end());
  out.push_back(program_id);
  return out;
}

expected<program_tokenizer::replay_result> program_tokenizer::replay(
    const task_spec& t, const std::vector<int32_t>& program_tokens) const {
  auto builder = kernels::program_builder::create(t, target_);
  if (!builder) return builder.err();
  auto& b = *builder;
  replay_result out;
  size_t i = 0;
  while (!b.done()) {
    const auto& d = b.next();
    if (i + 1 >= program_tokens.size())
      return make_error("program tokens end after " + std::to_string(program_tokens.size()) +
                        " tokens, before the decision '" + d.slot + "'");
    if (program_tokens[i] != slot_id(d.slot))
      return make_error("program token " + std::to_string(i) + " is '" + token(program_tokens[i]) +
                        "', expected the slot '" + d.slot + "'");
    decision_tokens dt;
    dt.choice_index = static_cast<int32_t>(i + 1);
    dt.chosen = -1;
    dt.legal.reserve(d.options.size());
    std::string option;
    for (const auto& o : d.options) {
      int32_t c = choice_id(d.slot, o);
      if (c < 0)
        return make_error("choice '" + d.slot + "=" + o + "' is not in the " + target_ + " vocabulary");
      if (c == program_tokens[i + 1]) {
        dt.chosen = static_cast<int32_t>(dt.legal.size());
        option = o;
      }
      dt.legal.push_back(c);
    }
    if (dt.chosen < 0)
      return make_error("program token " + std::to_string(i + 1) + " is '" + token(program_tokens[i + 1]) +
                        "', not a legal option of '" + d.slot + "'");
    if (auto st = b.choose(option); !st) return st.err();
    out.decisions.push_back(std::move(dt));
    i += 2;
  }
  if (i != program_tokens.size())
    return make_error("program tokens run " + std::to_string(program_tokens.size() - i) +
                      " tokens past the end of the program");
  out.prog = b.result();
  return out;
}

std::string program_tokenizer::to_string(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ' ';
    out += token(ids[i]);
  }
  return out;
}

}  // namespace crucible::policies
