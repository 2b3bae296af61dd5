#pragma once
// The space of programs for a task, as a sequence of decisions. The policy decodes a program by asking the
// builder for the next decision (a slot and its legal options) and choosing one; masking the policy's
// logits to those options keeps every sample well formed. Legality (which rewrites match, which ops may
// fuse, which strategies and knobs a group admits) is kernel knowledge and lives here, beside the emitters.
//
// Decision order: (1) each rewrite, in catalogue order, that matches the chain as rewritten so far: no|yes;
// (2) for each op of the rewritten chain after the first: split|fuse with the group before it (fuse only
// where the emitter can fuse); (3) for each group in order: its strategy, then each knob of that strategy.
#include <random>
#include <string>
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

/// Builds one program decision by decision.
class program_builder {
 public:
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

/// The eager-equivalent program: no rewrites, one group per op, baseline strategy (library call for GEMM).
/// Always in the space, so a reward of about 1.0 is always reachable.
program eager_program(const task_spec& task);

/// A uniformly random walk through the decisions (tests, and a baseline policy).
program random_program(const task_spec& task, std::mt19937_64& rng, std::string_view target = "cpu");

/// Whether `p` is a legal program for `task` (same answer as decisions_of, without the decisions).
status validate_program(const task_spec& task, const program& p, std::string_view target = "cpu");

}  // namespace crucible::kernels
