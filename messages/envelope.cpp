#include "messages/envelope.hpp"

namespace crucible {

const std::vector<std::string>& known_kinds() {
  static const std::vector<std::string> kinds = {
      message_kind<task_spec>::name,       message_kind<prompt>::name,
      message_kind<candidate>::name,       message_kind<compile_result>::name,
      message_kind<bench_result>::name,    message_kind<eval_request>::name,
      message_kind<verdict>::name,         message_kind<scored_candidate>::name,
      message_kind<scored_group>::name,    message_kind<group_batch>::name,
      message_kind<weights_update>::name,  message_kind<control>::name,
      message_kind<status_report>::name,   message_kind<peer_ready>::name,
      message_kind<peer_registered>::name, message_kind<heartbeat>::name,
      message_kind<work_item>::name,       message_kind<work_result>::name,
      message_kind<work_credit>::name,     message_kind<peer_disconnect>::name,
      message_kind<wire_error>::name};
  return kinds;
}

namespace {

const msgpack::object* find_key(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key)
      return &kv.val;
  }
  return nullptr;
}

}  // namespace

expected<envelope> decode(std::string_view bytes) {
  if (bytes.empty()) return make_error("empty frame");
  auto handle = std::make_shared<msgpack::object_handle>();
  try {
    size_t offset = 0;
    // Limits keep a hostile frame from claiming billions of elements.
    const msgpack::unpack_limit limit(1u << 24, 1u << 20, 256u << 20, 1u << 30, 1u << 20, 64);
    msgpack::unpack(*handle, bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
    if (offset != bytes.size())
      return make_error("frame has " + std::to_string(bytes.size() - offset) +
                        " trailing bytes after the envelope");
  } catch (const msgpack::insufficient_bytes&) {
    return make_error("truncated frame (" + std::to_string(bytes.size()) + " bytes)");
  } catch (const std::exception& e) {
    return make_error(std::string("undecodable frame: ") + e.what());
  }
  const msgpack::object& root = handle->get();
  if (root.type != msgpack::type::MAP) return make_error("frame is not a msgpack map (not an envelope)");
  envelope env;
  const auto* v = find_key(root, "v");
  if (!v) return make_error("envelope has no schema version ('v')");
  if (v->type != msgpack::type::POSITIVE_INTEGER)
    return make_error("envelope 'v' is not an unsigned integer");
  // Compared as sent: a 64-bit value must not wrap onto the version this build speaks.
  if (v->via.u64 != schema_version)
    return make_error("schema version " + std::to_string(v->via.u64) +
                      " is not supported (this build speaks " + std::to_string(schema_version) + ")");
  env.version = schema_version;
  const auto* kind = find_key(root, "kind");
  if (!kind || kind->type != msgpack::type::STR) return make_error("envelope has no 'kind' string");
  env.kind.assign(kind->via.str.ptr, kind->via.str.size);
  if (const auto* from = find_key(root, "from"); from && from->type == msgpack::type::STR)
    env.from.assign(from->via.str.ptr, from->via.str.size);
  const auto* body = find_key(root, "body");
  if (!body) return make_error("envelope of kind '" + env.kind + "' has no 'body'");
  if (body->type != msgpack::type::MAP)
    return make_error("envelope body of kind '" + env.kind + "' is not a map");
  env.handle_ = std::move(handle);
  env.body_ = body;
  return env;
}

}  // namespace crucible
