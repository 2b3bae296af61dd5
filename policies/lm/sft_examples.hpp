#pragma once
// The sft stage's examples as text (CUDA-L1 stage 1): for each correct kernel of a corpus, the contrastive
// prompt of its task and an answer in the three sections the prompt asks for, whose code is that kernel.
// Three kinds, as the paper's data: the kernel alone (no earlier kernels shown), its varied copies
// (source_variants), and contrastive examples — two slower kernels of the same task with their measured
// speedups in the prompt, the faster kernel as the answer. The analysis and design sections are written
// from what is known of the kernels: their measured speedups and, for kernels the program policy wrote,
// their programs (the fusion, rewrites and strategies each chose).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/prompt.hpp"

namespace crucible::policies {

/// A correct kernel: its task, source, program (empty when hand-written) and verified speedup vs eager.
struct sft_source {
  std::string task;
  std::string source;
  std::string program;
  double speedup = 0.0;
};

struct sft_text_example {
  prompt prompt_;      ///< the task and the exemplars shown (rendered by the policy's framing)
  std::string answer;  ///< analysis, design and the code block
  std::string code;    ///< the answer's kernel
};

struct sft_data_options {
  int64_t variants = 2;     ///< varied copies of each source
  int64_t contrastive = 2;  ///< contrastive examples per source whose task has slower kernels
  uint64_t seed = 1;
};

/// The answer a kernel is trained as, for a prompt of `task` showing `shown` exemplars.
std::string sft_answer(const std::vector<exemplar>& shown, const sft_source& kernel, const task_spec& task,
                       const std::string& target);

/// Every example of `sources` whose task is in `tasks`; errors when none is.
expected<std::vector<sft_text_example>> build_sft_examples(const std::vector<sft_source>& sources,
                                                           const std::map<std::string, task_spec>& tasks,
                                                           const std::string& target,
                                                           const sft_data_options& options);

/// A user's corpus: JSON lines {"task": NAME, "code": SOURCE} (optional "speedup"); errors name the line.
expected<std::vector<sft_source>> read_sft_jsonl(const std::string& path);

}  // namespace crucible::policies
