#pragma once
// The worker's references, built once per task (a reference validates the task and prepares its ops; a
// worker sees a handful of tasks, evaluation after evaluation). Keyed by task name and a hash of the whole
// spec, so a changed task under the same name gets a new reference.
#include <map>
#include <memory>
#include <string>

#include "kernels/reference/reference_executor.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

class reference_cache {
 public:
  /// The reference for `task`, or why the reference rejects it. Pointers stay valid until the cache is
  /// cleared (it is when it holds 64 references).
  expected<const reference_executor*> get(const task_spec& task);

 private:
  std::map<std::string, std::unique_ptr<reference_executor>> references_;
};

}  // namespace crucible::kernels
