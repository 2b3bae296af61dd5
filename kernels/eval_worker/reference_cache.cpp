#include "kernels/eval_worker/reference_cache.hpp"

#include <msgpack.hpp>

#include "messages/content_hash.hpp"

namespace crucible::kernels {

expected<const reference_executor*> reference_cache::get(const task_spec& task) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, task);
  std::string key = task.name + "#" + short_hash(std::string_view(buf.data(), buf.size()));
  if (auto it = references_.find(key); it != references_.end()) return it->second.get();
  auto created = reference_executor::create(task);
  if (!created) return created.err();
  if (references_.size() >= 64) references_.clear();  // a worker sees a handful of tasks; bound it anyway
  auto [it, _] = references_.emplace(key, std::make_unique<reference_executor>(std::move(*created)));
  return it->second.get();
}

}  // namespace crucible::kernels
