#pragma once
// The one envelope every frame travels in: {"v": schema version, "kind": message type, "from": sender,
// "body": the message as a msgpack map}. Field names are the contract (MSGPACK_DEFINE_MAP): unknown keys are
// ignored and missing keys keep their defaults, so peers in any language can evolve independently within a
// version. A different version, or bytes that do not decode, give an error value, never an exception.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

#include "messages/candidate.hpp"
#include "messages/cluster.hpp"
#include "messages/control.hpp"
#include "messages/evaluation.hpp"
#include "messages/expected.hpp"
#include "messages/prompt.hpp"
#include "messages/scored.hpp"
#include "messages/task.hpp"
#include "messages/weights.hpp"

namespace crucible {

/// Bumped whenever a field changes meaning or a required field is added.
constexpr uint32_t schema_version = 1;

/// The wire name of each message type.
template <class T>
struct message_kind;

#define CRUCIBLE_MESSAGE_KIND(type, wire_name)     \
  template <>                                      \
  struct message_kind<type> {                      \
    static constexpr const char* name = wire_name; \
  };

CRUCIBLE_MESSAGE_KIND(task_spec, "task")
CRUCIBLE_MESSAGE_KIND(prompt, "prompt")
CRUCIBLE_MESSAGE_KIND(candidate, "candidate")
CRUCIBLE_MESSAGE_KIND(compile_result, "compile_result")
CRUCIBLE_MESSAGE_KIND(bench_result, "bench_result")
CRUCIBLE_MESSAGE_KIND(eval_request, "eval_request")
CRUCIBLE_MESSAGE_KIND(verdict, "verdict")
CRUCIBLE_MESSAGE_KIND(scored_candidate, "scored_candidate")
CRUCIBLE_MESSAGE_KIND(scored_group, "scored_group")
CRUCIBLE_MESSAGE_KIND(group_batch, "group_batch")
CRUCIBLE_MESSAGE_KIND(weights_update, "weights_update")
CRUCIBLE_MESSAGE_KIND(control, "control")
CRUCIBLE_MESSAGE_KIND(status_report, "status_report")
CRUCIBLE_MESSAGE_KIND(peer_ready, "ready")
CRUCIBLE_MESSAGE_KIND(peer_registered, "registered")
CRUCIBLE_MESSAGE_KIND(heartbeat, "heartbeat")
CRUCIBLE_MESSAGE_KIND(work_item, "work")
CRUCIBLE_MESSAGE_KIND(work_result, "work_result")
CRUCIBLE_MESSAGE_KIND(work_credit, "credit")
CRUCIBLE_MESSAGE_KIND(peer_disconnect, "disconnect")
CRUCIBLE_MESSAGE_KIND(wire_error, "error")

#undef CRUCIBLE_MESSAGE_KIND

/// Every kind this schema version knows, for validation and tooling.
const std::vector<std::string>& known_kinds();

/// Packs `msg` in an envelope into `buf`.
template <class T>
void encode_into(msgpack::sbuffer& buf, const T& msg, std::string_view from = {}) {
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(4);
  pk.pack(std::string("v"));
  pk.pack(schema_version);
  pk.pack(std::string("kind"));
  pk.pack(std::string(message_kind<T>::name));
  pk.pack(std::string("from"));
  pk.pack(std::string(from));
  pk.pack(std::string("body"));
  pk.pack(msg);
}

/// Encodes `msg` in an envelope. Never fails for a well-formed struct.
template <class T>
std::string encode(const T& msg, std::string_view from = {}) {
  msgpack::sbuffer buf;
  encode_into(buf, msg, from);
  return std::string(buf.data(), buf.size());
}

/// encode() as bytes, for the payload of a work_item or work_result (an envelope inside an envelope).
template <class T>
std::vector<char> encode_embedded(const T& msg, std::string_view from = {}) {
  msgpack::sbuffer buf;
  encode_into(buf, msg, from);
  return std::vector<char>(buf.data(), buf.data() + buf.size());
}

/// A decoded envelope whose body is still generic msgpack; as<T>() converts it.
class envelope {
 public:
  uint32_t version = 0;
  std::string kind;
  std::string from;

  /// The body as T, or an error if the kind differs or the body does not fit T.
  template <class T>
  expected<T> as() const {
    if (kind != message_kind<T>::name)
      return make_error("message kind is '" + kind + "', expected '" + message_kind<T>::name + "'");
    try {
      T out;
      body_->convert(out);
      return out;
    } catch (const std::exception& e) {
      return make_error("malformed '" + kind + "' body: " + e.what());
    }
  }

 private:
  friend expected<envelope> decode(std::string_view bytes);
  std::shared_ptr<msgpack::object_handle> handle_;
  const msgpack::object* body_ = nullptr;
};

/// Parses one frame. Truncated or malformed bytes, a missing field or a different schema version give an
/// error that says which.
expected<envelope> decode(std::string_view bytes);

/// decode + as<T> in one step.
template <class T>
expected<T> decode_as(std::string_view bytes) {
  auto env = decode(bytes);
  if (!env) return env.err();
  return env->template as<T>();
}

/// decode_as for an embedded envelope (a work_item or work_result payload element).
template <class T>
expected<T> decode_embedded(const std::vector<char>& bytes) {
  return decode_as<T>(std::string_view(bytes.data(), bytes.size()));
}

}  // namespace crucible
