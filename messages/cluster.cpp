#include "messages/cluster.hpp"

namespace crucible {

std::optional<uint32_t> peek_schema_version(std::string_view bytes) {
  if (bytes.empty()) return std::nullopt;
  try {
    size_t offset = 0;
    // Same limits as decode(): a hostile frame cannot make this allocate much.
    const msgpack::unpack_limit limit(1u << 24, 1u << 20, 256u << 20, 1u << 30, 1u << 20, 64);
    msgpack::object_handle handle;
    msgpack::unpack(handle, bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
    const msgpack::object& root = handle.get();
    if (root.type != msgpack::type::MAP) return std::nullopt;
    for (uint32_t i = 0; i < root.via.map.size; ++i) {
      const auto& kv = root.via.map.ptr[i];
      if (kv.key.type == msgpack::type::STR &&
          std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == "v" &&
          kv.val.type == msgpack::type::POSITIVE_INTEGER && kv.val.via.u64 <= UINT32_MAX)
        return static_cast<uint32_t>(kv.val.via.u64);
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace crucible
