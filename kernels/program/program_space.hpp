#pragma once
// The space of programs for a task, as a sequence of decisions. The policy decodes a program by asking the
// builder for the next decision (a slot and its legal options) and choosing one; masking the policy's
// logits to those options keeps every sample well formed. Legality (which rewrites match, which ops may
// fuse, which strategies and knobs a group admits) is kernel knowledge and lives here, beside the emitters.
//
// Decision order: (1) each rewrite, in catalogue order, that matches the chain as rewritten so far: no|yes;
// (2) for each op of the rewritten chain after the first: split|fuse with the group before it (fuse only
// where the emitter can fuse); (3) for each group in order: its strategy, then each knob of that strategy.
//
// Slots and options (kernels/program/rewrites.hpp and group_kinds.hpp say what each means):
//   rewrite:<name>      no | yes      drop_redundant, max_through_monotone, sum_through_affine,
//                                     gemm_rowsum_to_gemv, fold_scalars
//   fuse:<op>           split | fuse  (fuse only where legal; <op> may be a derived op: _affine, ...)
//   strategy:<kind>     elementwise: loop | simd; row: multi_pass | fused_pass | online;
//                       gemm: blas | tiled | naive; gemv: dot | simd
//   knob:<name>         unroll 1|2|4, math libm|poly, acc 1|4|8, block_rows 0|32|128, tile 32|64
// Every decision is asked, even one with a single legal option, so a program's decisions line up with the
// chain the same way for every task. Targets: "cpu" and "cuda" (group_kinds.hpp lists the CUDA kinds,
// strategies and knobs: strategy:grid|vec4, knob:threads, math accurate|fast, ...); each target has its
// own vocabulary, and the CPU's never changes when CUDA-only ops join the catalogue.
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// One choice. `slot` is a vocabulary key ("rewrite:<name>", "fuse:<op>", "strategy:<group kind>",
/// "knob:<name>"); options are listed in a fixed order.
struct decision {
  std::string slot;
  std::vector<std::string> options;
};

/// Every slot and every "slot=option" choice any task can produce, in a stable order: the policy's token
/// ids derive from it, so changing the order invalidates checkpoints.
struct program_vocabulary {
  std::vector<std::string> slots;
  std::vector<std::string> choices;
};
const program_vocabulary& vocabulary(std::string_view target = "cpu");

/// Builds one program decision by decision. Copies are independent (a copy can be explored, e.g. in a
/// beam search, without disturbing the original). Not thread-safe; use one builder per thread.
class program_builder {
 public:
  program_builder(const program_builder& o);
  program_builder& operator=(const program_builder& o);
  program_builder(program_builder&&) noexcept = default;
  program_builder& operator=(program_builder&&) noexcept = default;
  ~program_builder();

  /// Errors if the task does not validate or the target has no emitter for one of its ops.
  static expected<program_builder> create(const task_spec& task, std::string_view target = "cpu");

  bool done() const;
  /// The pending decision. Precondition: !done().
  const decision& next() const;
  /// Takes one of next().options; an error (and no change) for anything else.
  status choose(const std::string& option);
  /// The finished program. Precondition: done().
  program result() const;
  /// "slot=option" for each decision taken so far, in order.
  const std::vector<std::string>& chosen() const { return chosen_; }

  struct state;  // defined in program_space.cpp

 private:
  explicit program_builder(std::shared_ptr<state> s);
  std::shared_ptr<state> state_;
  std::vector<std::string> chosen_;
};

/// The decisions (each with the option taken) that build `p` for `task`; an error if `p` is not in the
/// task's space. Used to show exemplars to the policy and to replay a sample for the learner.
expected<std::vector<std::pair<decision, std::string>>> decisions_of(const task_spec& task, const program& p,
                                                                     std::string_view target = "cpu");

/// The eager-equivalent program: no rewrites, one group per op, baseline strategy (loop / multi_pass /
/// blas / dot) with default knobs (unroll=1, math=libm, acc=1, block_rows=0). Always in the space, so a
/// reward of about 1.0 is always reachable. An empty program if the task is not in any space (invalid).
/// `target` empty: the task's first target (cpu when it names none).
program eager_program(const task_spec& task, std::string_view target = {});

/// A uniformly random walk through the decisions (tests, and a baseline policy).
program random_program(const task_spec& task, std::mt19937_64& rng, std::string_view target = "cpu");

/// Whether `p` is a legal program for `task` (same answer as decisions_of, without the decisions).
status validate_program(const task_spec& task, const program& p, std::string_view target = "cpu");

}  // namespace crucible::kernels
