#pragma once
// RUN_DIR/checkpoints/: one file per checkpoint (step_000010.ckpt), written to a temporary name and renamed
// so a crash never leaves a torn checkpoint, plus LATEST naming the newest. The payload is the learner's
// opaque state; the header records step and policy version so --resume can report what it continues from.
#include <cstdint>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "messages/expected.hpp"

namespace crucible::runtime {

struct checkpoint {
  int64_t step = 0;
  int64_t policy_version = 0;
  double wall_s = 0.0;      ///< run time consumed so far (resumed runs add to it)
  std::vector<char> state;  ///< learner state (policy, reference, optimizer)
  MSGPACK_DEFINE_MAP(step, policy_version, wall_s, state);
};

/// Writes `c` and points LATEST at it; keeps the newest `keep` checkpoints.
status save_checkpoint(const std::string& dir, const checkpoint& c, int keep = 3);

/// The checkpoint LATEST names; an error if there is none or it does not decode.
expected<checkpoint> load_latest_checkpoint(const std::string& dir);

}  // namespace crucible::runtime
