#pragma once
// CAF type ids for in-process messaging. Message structs cross actor boundaries by value; when CAF needs to
// serialize one (a remote CAF node, or to_string) it uses the same msgpack encoding as the wire, so there is
// exactly one serialization of each type. Atoms use the 4-argument CAF_ADD_ATOM so a port to CAF 1.x is
// mechanical. Only units that use CAF include this header.
#include <string>
#include <type_traits>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include "messages/envelope.hpp"
#include "messages/stage_request.hpp"

namespace crucible {

template <class T, class = void>
struct is_wire_message : std::false_type {};
template <class T>
struct is_wire_message<T, std::void_t<decltype(message_kind<T>::name)>> : std::true_type {};

/// CAF inspection of a wire message through its msgpack envelope.
template <class Inspector, class T>
std::enable_if_t<is_wire_message<T>::value, typename Inspector::result_type> inspect(Inspector& f, T& x) {
  if constexpr (Inspector::reads_state) {
    std::string bytes = encode(x);
    return f(caf::meta::type_name(message_kind<T>::name), bytes);
  } else {
    std::string bytes;
    auto load = caf::meta::load_callback([&]() -> caf::error {
      auto decoded = decode_as<T>(bytes);
      if (!decoded) return caf::make_error(caf::sec::invalid_argument, decoded.message());
      x = std::move(*decoded);
      return caf::none;
    });
    return f(caf::meta::type_name(message_kind<T>::name), bytes, load);
  }
}

/// CAF inspection of a stage's work, which never leaves the process (the wire carries it as a work_item).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_request& x) {
  return f(caf::meta::type_name("stage_request"), x.stage, x.scored, x.best_seen);
}

}  // namespace crucible

CAF_BEGIN_TYPE_ID_BLOCK(crucible, caf::first_custom_type_id)

CAF_ADD_TYPE_ID(crucible, (crucible::task_spec))
CAF_ADD_TYPE_ID(crucible, (crucible::prompt))
CAF_ADD_TYPE_ID(crucible, (crucible::candidate))
CAF_ADD_TYPE_ID(crucible, (crucible::compile_result))
CAF_ADD_TYPE_ID(crucible, (crucible::bench_result))
CAF_ADD_TYPE_ID(crucible, (crucible::eval_request))
CAF_ADD_TYPE_ID(crucible, (crucible::verdict))
CAF_ADD_TYPE_ID(crucible, (crucible::scored_candidate))
CAF_ADD_TYPE_ID(crucible, (crucible::scored_group))
CAF_ADD_TYPE_ID(crucible, (crucible::group_batch))
CAF_ADD_TYPE_ID(crucible, (crucible::weights_update))
CAF_ADD_TYPE_ID(crucible, (crucible::control))
CAF_ADD_TYPE_ID(crucible, (crucible::status_report))
CAF_ADD_TYPE_ID(crucible, (std::vector<crucible::candidate>))

CAF_ADD_ATOM(crucible, crucible, generate_atom, "generate")
CAF_ADD_ATOM(crucible, crucible, insert_atom, "insert")
CAF_ADD_ATOM(crucible, crucible, exemplar_atom, "exemplars")
CAF_ADD_ATOM(crucible, crucible, groups_atom, "groups")
CAF_ADD_ATOM(crucible, crucible, weights_atom, "weights")
CAF_ADD_ATOM(crucible, crucible, stage_atom, "stage")
CAF_ADD_ATOM(crucible, crucible, tick_atom, "tick")
CAF_ADD_ATOM(crucible, crucible, stop_atom, "stop")
CAF_ADD_ATOM(crucible, crucible, status_atom, "status")
CAF_ADD_ATOM(crucible, crucible, pool_atom, "pool")
CAF_ADD_ATOM(crucible, crucible, spawn_atom, "spawn_role")
CAF_ADD_ATOM(crucible, crucible, publish_atom, "publish")
CAF_ADD_ATOM(crucible, crucible, checkpoint_atom, "checkpoint")
CAF_ADD_ATOM(crucible, crucible, step_atom, "step")
CAF_ADD_ATOM(crucible, crucible, pid_atom, "worker_pid")

// Cluster messages (messages/cluster.hpp), appended so the ids above keep their values.
CAF_ADD_TYPE_ID(crucible, (crucible::peer_ready))
CAF_ADD_TYPE_ID(crucible, (crucible::peer_registered))
CAF_ADD_TYPE_ID(crucible, (crucible::heartbeat))
CAF_ADD_TYPE_ID(crucible, (crucible::work_item))
CAF_ADD_TYPE_ID(crucible, (crucible::work_result))
CAF_ADD_TYPE_ID(crucible, (crucible::work_credit))
CAF_ADD_TYPE_ID(crucible, (crucible::peer_disconnect))
CAF_ADD_TYPE_ID(crucible, (crucible::wire_error))

// The cluster runtime (runtime/cluster/cluster_gateway, runtime/cluster/node_session), appended likewise.
CAF_ADD_ATOM(crucible, crucible, join_atom, "join")
CAF_ADD_ATOM(crucible, crucible, scale_atom, "scale")
CAF_ADD_ATOM(crucible, crucible, remote_atom, "remote")
CAF_ADD_ATOM(crucible, crucible, wire_atom, "wire")

// The pipeline ledger's persistence (runtime/pipeline/pipeline_ledger, runtime/storage/replay_store),
// appended likewise.
CAF_ADD_ATOM(crucible, crucible, record_atom, "record")
CAF_ADD_ATOM(crucible, crucible, restore_atom, "restore")

// The one stage message (messages/stage_request.hpp), appended likewise.
CAF_ADD_TYPE_ID(crucible, (crucible::stage_request))

CAF_END_TYPE_ID_BLOCK(crucible)
