#include "policies/lm/contrastive_prompt.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::policies {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string abi_section(const std::string& target) {
  std::ostringstream s;
  s << "## The contract\n"
    << "Write one " << (target == "cuda" ? ".cu file (CUDA)" : ".cpp file (C++17, CPU)")
    << " that includes <crucible_abi.h> and exports\n\n"
    << "```c\n"
    << "typedef struct { void* data; int32_t dtype; int32_t ndim; int64_t shape[8]; int64_t stride[8]; } "
       "cru_tensor;\n"
    << "typedef struct { int32_t abi_version; int32_t device; void* stream; void* workspace; size_t "
       "workspace_bytes; "
       "void* blas; } cru_context;\n"
    << "extern \"C\" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t "
       "n_inputs,\n"
    << "                                 cru_tensor* outputs, int32_t n_outputs);  /* 0 = success */\n"
    << "```\n\n"
    << "Inputs arrive in the order listed above and are read-only; the one output is preallocated and every "
       "element must be written. Strides are in elements. dtype codes: 0 float32, 1 float16, 2 bfloat16, "
       "3 float64, 4 int32, 5 int64, 6 bool.";
  if (target == "cuda")
    s << " Order all device work on ctx->stream (a cudaStream_t); ctx->blas is a cuBLAS handle bound to it. "
         "Work left running after the call, other streams, cached results and reading the expected output "
         "are "
         "detected and score nothing.";
  else
    s << " Threads must finish before the call returns; cached results, clocks and reading the expected "
         "output "
         "are detected and score nothing.";
  s << "\n\n";
  return s.str();
}

// A KernelBench task: its module as written, and KernelBench's contract for ModelNew (the harness's, with
// what Crucible's protocol detects).
std::string render_module_task(const task_spec& task) {
  std::ostringstream s;
  s << "## Task: " << task.name << "\n";
  if (!task.description.empty()) s << task.description << "\n";
  s << "\nThe reference, a PyTorch module in KernelBench's format (Model, get_inputs, "
       "get_init_inputs):\n\n```python\n"
    << task.module << (task.module.empty() || task.module.back() == '\n' ? "" : "\n") << "```\n\n";
  s << "Inputs:";
  for (size_t i = 0; i < task.inputs.size(); ++i)
    s << (i ? "," : "") << " " << task.inputs[i].name << " " << task.inputs[i].dtype << " "
      << kernels::shape_str(task.inputs[i].shape);
  s << ". The output is checked against Model's with atol " << number(kernels::task_atol(task))
    << " and rtol " << number(kernels::task_rtol(task))
    << " on several seeds (heavy-tailed values included), on fresh inputs every call.\n\n";
  s << "## The contract\n"
    << "Write one Python file that defines `class ModelNew(nn.Module)`: built like Model, from "
       "`ModelNew(*get_init_inputs())` after the same `torch.manual_seed`, so parameters created in the same "
       "order get the same values; its `forward` takes the same inputs and returns the same tensor. The file "
       "runs alone (import what it uses; get_inputs and get_init_inputs come from the reference). Inputs are "
       "read-only; threads, processes, files, cached results and work outside forward() are detected and "
       "score nothing.\n\n";
  return s.str();
}

const char* instruction =
    "## Your answer\n"
    "Answer in three sections:\n"
    "1. **Performance analysis**: why the faster earlier kernels are faster than the slower ones (if any are "
    "shown).\n"
    "2. **Algorithm design**: the plan for a kernel faster than all of them.\n"
    "3. **Code**: the complete source in one fenced code block, and nothing after it.\n";

const char* refine_instruction =
    "Improve on it: answer again in the same three sections (performance analysis, algorithm design, code), "
    "the complete source in one fenced code block, and nothing after it.";

}  // namespace

const char* code_fence_language(const task_spec& task, const std::string& target) {
  if (!task.module.empty()) return "python";
  return target == "cuda" ? "cuda" : "cpp";
}

expected<std::string> render_task(const task_spec& task, const std::string& target) {
  if (!task.module.empty()) return render_module_task(task);
  auto shapes = kernels::infer_shapes(task);
  if (!shapes) return shapes.err();
  std::ostringstream s;
  s << "## Task: " << task.name << "\n";
  if (!task.description.empty()) s << task.description << "\n";
  s << "\nThe reference, in PyTorch terms (v is the running value):\n\n```python\n";
  s << "def reference(";
  for (size_t i = 0; i < task.inputs.size(); ++i) s << (i ? ", " : "") << task.inputs[i].name;
  s << "):\n";
  for (const auto& in : task.inputs)
    s << "    # " << in.name << ": " << in.dtype << " " << kernels::shape_str(in.shape)
      << (in.param ? " (parameter)" : "") << "\n";
  s << "    v = " << task.inputs.front().name << "\n";
  for (size_t i = 0; i < task.ops.size(); ++i) {
    const auto& op = task.ops[i];
    const auto* info = kernels::find_op(op.op);
    s << "    v = " << op.op << "(v";
    for (const auto& a : op.args) s << ", " << a;
    if (info)
      for (const auto& attr : info->attrs)
        s << ", " << attr.name << "=" << number(kernels::op_attr(op, attr.name));
    s << ")  # " << (info ? info->summary : std::string("?")) << " -> "
      << kernels::shape_str(shapes->after[i]) << "\n";
  }
  s << "    return v\n```\n\n";
  s << "Output: " << kernels::shape_str(shapes->output()) << "; checked against the reference with atol "
    << number(kernels::task_atol(task)) << " and rtol " << number(kernels::task_rtol(task))
    << " on several seeds and input distributions (heavy-tailed included), on fresh inputs every call.\n\n";
  s << abi_section(target);
  return s.str();
}

expected<rendered_prompt> render_contrastive_prompt(const prompt& p, const prompt_budget& budget) {
  if (budget.max_tokens > 0 && !budget.count_tokens)
    return make_error("a prompt budget needs a token counter");
  auto head = render_task(p.task, p.target);
  if (!head) return head.err();
  // Exemplars shown fastest first; dropped slowest first.
  std::vector<size_t> order(p.exemplars.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.exemplars[a].speedup > p.exemplars[b].speedup; });
  auto first_turn = [&](size_t shown) {
    std::ostringstream s;
    s << *head;
    if (shown > 0) {
      s << "## Earlier kernels for this task, with their verified speedup over PyTorch eager\n\n";
      for (size_t k = 0; k < shown; ++k) {
        const auto& e = p.exemplars[order[k]];
        s << "### Kernel " << (k + 1) << ": "
          << (e.speedup > 0 ? number(e.speedup) + "x" : std::string("failed (incorrect or not compiled)"))
          << "\n```" << code_fence_language(p.task, p.target) << "\n"
          << e.source << (e.source.empty() || e.source.back() == '\n' ? "" : "\n") << "```\n\n";
      }
    } else {
      s << "## Earlier kernels for this task\nNone yet: write the first.\n\n";
    }
    s << instruction;
    return s.str();
  };
  // The newest `shown` attempts, oldest of them first.
  auto compose = [&](size_t exemplars, size_t shown) {
    rendered_prompt r;
    r.text = first_turn(exemplars);
    r.turns.push_back({"user", r.text});
    const size_t from = p.attempts.size() - shown;
    for (size_t k = from; k < p.attempts.size(); ++k) {
      const auto& a = p.attempts[k];
      const std::string result = a.feedback + "\n\n" + refine_instruction + "\n";
      r.turns.push_back({"assistant", a.answer});
      r.turns.push_back({"user", result});
      const auto n = std::to_string(k - from + 1);
      r.text +=
          "\n## Your attempt " + n + "\n" + a.answer + "\n\n## What came of attempt " + n + "\n" + result;
    }
    r.exemplars_shown = static_cast<int32_t>(exemplars);
    r.exemplars_dropped = static_cast<int32_t>(order.size() - exemplars);
    r.attempts_shown = static_cast<int32_t>(shown);
    r.attempts_dropped = static_cast<int32_t>(p.attempts.size() - shown);
    return r;
  };
  const size_t all = p.attempts.size();
  for (size_t shown = all + 1; shown-- > 0;) {
    // Every attempt first with as many exemplars as fit; then fewer attempts, without exemplars.
    for (size_t ex = (shown == all ? order.size() : 0) + 1; ex-- > 0;) {
      auto r = compose(ex, shown);
      if (budget.max_tokens <= 0 || budget.count_tokens(r) <= budget.max_tokens) return r;
    }
  }
  return make_error("the prompt for task '" + p.task.name + "' does not fit " +
                    std::to_string(budget.max_tokens) + " tokens even without exemplars");
}

}  // namespace crucible::policies
