#pragma once
// The contrastive prompt (CUDA-L1): a task plus earlier candidates for it with their measured speedups, so
// the policy can compare what was fast with what was not.
#include <cstdint>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "messages/task.hpp"

namespace crucible {

struct exemplar {
  std::string candidate_id;
  std::string program;   ///< program text (kernels/program)
  std::string source;    ///< the emitted or written source
  double speedup = 0.0;  ///< verified speedup vs eager (0 if it failed)
  int32_t bucket = 0;    ///< performance bucket, 0 = slowest
  MSGPACK_DEFINE_MAP(candidate_id, program, source, speedup, bucket);
};

/// An earlier attempt at the task, fed back to the policy as turns of a conversation (multi-turn
/// refinement, replay.refine_turns): what it wrote and what came of it.
struct attempt {
  std::string candidate_id;
  std::string answer;    ///< the policy's whole answer (a language model's), else its source
  std::string feedback;  ///< the compile error, the failed check or verdict, or the verified speedup
  MSGPACK_DEFINE_MAP(candidate_id, answer, feedback);
};

struct prompt {
  std::string group_id;
  task_spec task;
  std::vector<exemplar> exemplars;
  int32_t group_size = 1;  ///< G: candidates wanted for this prompt (one GRPO group)
  std::string target = "cpu";
  std::vector<attempt> attempts;  ///< oldest first; empty unless refinement is on
  MSGPACK_DEFINE_MAP(group_id, task, exemplars, group_size, target, attempts);
};

}  // namespace crucible
