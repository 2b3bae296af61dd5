#pragma once
// Kernels someone else published with their claimed speedups, read into one shape for `crucible rejudge`:
// CUDA-L1's release (JSON lines: level_id, task_id, ref_code, custom_code, score_* against each baseline) and
// a KernelBench-style folder of solutions (ModelNew files named after their problems) beside a KernelBench
// checkout. What the code is made of (a CUDA kernel, load_inline, Triton, a try/except) is read here too:
// facts for the table, never a verdict (DESIGN.md §6: evidence, not patterns).
#include <string>
#include <utility>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::kernels {

/// What a published candidate's source contains.
enum class code_feature { cuda_kernel, load_inline, triton, try_except };
const char* wire_name(code_feature f);
/// The feature wire_name() names; false for a name it does not know.
bool code_feature_named(const std::string& name, code_feature* out);
std::vector<code_feature> code_features(const std::string& python_source);

struct published_kernel {
  int level = 0, id = 0;
  std::string name;              ///< the task's name: kb<level>_<id>[_<Name> when the checkout gives it]
  std::string origin;            ///< where it was read: "h100.json line 19", or the solution's path
  std::string problem_source;    ///< the problem's module (Model, get_inputs, get_init_inputs)
  std::string candidate_source;  ///< ModelNew; empty where the publication has none for this task
  /// Claimed speedups by baseline ("eager", "torch.compile", "torch.compile reduce-overhead", "cuda graph",
  /// "cudnn"), as published; absent where the record has none.
  std::vector<std::pair<std::string, double>> claimed;
  /// The claim against eager, 0 when none.
  double claimed_vs_eager() const;
};

/// CUDA-L1's release format, one JSON object per line. A line that is not such an object is an error naming
/// the line; `level` (0: all) keeps one level.
expected<std::vector<published_kernel>> read_cuda_l1_jsonl(const std::string& path, int level = 0);

/// Solutions under `dir` named levelN/ID_Name.py or level_N_problem_ID*.py (KernelBench's run layout), each
/// paired with its problem in the KernelBench checkout `kernelbench_root`. A solution without a problem is an
/// error naming it; no claims (a folder carries none).
expected<std::vector<published_kernel>> read_solution_folder(const std::string& dir,
                                                             const std::string& kernelbench_root,
                                                             int level = 0);

/// Whether two problem modules define the same Model: its class's text, comments and layout aside. Sizes and
/// input generators may differ between KernelBench versions; the operation may not.
bool same_model_class(const std::string& a, const std::string& b);

/// The checkout's problems as A/A candidates: each problem's own Model submitted as ModelNew.
expected<std::vector<published_kernel>> self_candidates(const std::string& kernelbench_root, int level = 0);

}  // namespace crucible::kernels
