#pragma once
// One request evaluated in a child forked from the worker for it (DESIGN.md §5). A KernelBench candidate
// runs in the interpreter that holds the reference, and what it leaves there (imports, rebound functions,
// threads, a CUDA context, device memory) must not reach the next candidate. A fresh worker per candidate
// pays Python's start and torch's imports (8 of 9 s an evaluation on an H100); a child forked from a worker
// that has imported them but never touched the device starts in milliseconds, and everything the candidate
// could change ends with it: the parent that forks stays as it was.
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "messages/evaluation.hpp"

namespace crucible::kernels {

/// Around fork(2): Python's own fork protocol where an interpreter runs (its locks reset in the child).
struct fork_hooks {
  std::function<void()> before, after_in_parent, after_in_child;
};

/// Makes this process the reaper of its descendants' orphans (PR_SET_CHILD_SUBREAPER), so that what an
/// evaluation's child leaves running is found and ended after it. Call once, before the first fork.
bool adopt_orphans();

/// The outcome of one forked evaluation.
struct forked_outcome {
  bench_result result;
  /// Descendants of the child still ran after every sweep: this process can no longer promise the next
  /// request a clean machine (it should be retired).
  bool left_running = false;
};

/// Forks, runs `evaluate` in the child and returns what it answered, with a note of the fork. The child
/// closes `close_in_child` first (the client's pipes: its answer travels over a pipe of its own, relayed
/// here), dies with this process, and ends with _exit after answering. A child that dies without a whole
/// answer is a `crash` with worker_died set (the runner tries once more, as for a worker that died under a
/// candidate); whatever it left running is killed and reaped before this returns.
forked_outcome evaluate_forked(const std::function<bench_result()>& evaluate,
                               const std::vector<int>& close_in_child, const fork_hooks& hooks = {});

}  // namespace crucible::kernels
