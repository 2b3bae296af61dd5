#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <msgpack.hpp>

namespace crucible {

/// Versioned policy weights published by the learner; generators swap them in between samples.
struct weights_update {
  int64_t version = 0;
  std::string policy;  ///< policy kind, e.g. "program"
  std::vector<char>
      bytes;  ///< serialized parameters (policies/ decides the format); empty when `path` is set
  double created_unix = 0.0;
  /// Weights larger than policy.max_weights_message_mb: the file in the run directory that holds them.
  std::string path;
  MSGPACK_DEFINE_MAP(version, policy, bytes, created_unix, path);
};

}  // namespace crucible
