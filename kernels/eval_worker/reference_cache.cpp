#include "kernels/eval_worker/reference_cache.hpp"

#include <msgpack.hpp>

#include "messages/content_hash.hpp"

#ifdef CRUCIBLE_WITH_PYTHON
#include "kernels/python/kernelbench_reference.hpp"
#endif

namespace crucible::kernels {

namespace {

std::string key_of(const task_spec& task) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, task);
  return task.name + "#" + short_hash(std::string_view(buf.data(), buf.size()));
}

}  // namespace

expected<const reference_executor*> reference_cache::get(const task_spec& task) {
  const std::string key = key_of(task);
  if (auto it = references_.find(key); it != references_.end()) return it->second.get();
  auto created = reference_executor::create(task);
  if (!created) return created.err();
  if (references_.size() >= 64) references_.clear();  // a worker sees a handful of tasks; bound it anyway
  auto [it, _] = references_.emplace(key, std::make_unique<reference_executor>(std::move(*created)));
  return it->second.get();
}

expected<const reference_model*> reference_cache::get_model(const task_spec& task) {
  if (task.module.empty()) {
    auto chain = get(task);
    if (!chain) return chain.err();
    return static_cast<const reference_model*>(*chain);
  }
#ifdef CRUCIBLE_WITH_PYTHON
  const std::string key = key_of(task);
  if (auto it = modules_.find(key); it != modules_.end()) return it->second.get();
  auto created = kernelbench_reference::create(task);
  if (!created) return created.err();
  if (modules_.size() >= 64) modules_.clear();
  auto [it, _] = modules_.emplace(key, std::move(*created));
  return it->second.get();
#else
  return make_error(
      "a KernelBench task, and this worker was built without Python (python3-dev, pybind11-dev "
      "and python3-torch at configure time)");
#endif
}

}  // namespace crucible::kernels
