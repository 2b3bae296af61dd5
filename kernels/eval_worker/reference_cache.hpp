#pragma once
// The worker's references, built once per task (a reference validates the task and prepares its ops, or
// builds a KernelBench module's Model; a worker sees a handful of tasks, evaluation after evaluation). Keyed
// by task name and a hash of the whole spec, so a changed task under the same name gets a new reference.
#include <map>
#include <memory>
#include <string>

#include "kernels/reference/reference_executor.hpp"
#include "kernels/reference/reference_model.hpp"
#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

class reference_cache {
 public:
  /// The chain reference for `task`, or why the reference rejects it. Pointers stay valid until the cache
  /// is cleared (it is when it holds 64 references).
  expected<const reference_executor*> get(const task_spec& task);
  /// Any task's reference: a KernelBench module's (task.module set; an error in a worker built without
  /// Python) or the chain's.
  expected<const reference_model*> get_model(const task_spec& task);

 private:
  std::map<std::string, std::unique_ptr<reference_executor>> references_;
  std::map<std::string, std::unique_ptr<reference_model>> modules_;
};

}  // namespace crucible::kernels
