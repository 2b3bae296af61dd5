#pragma once
// policy.*: which policy writes the kernels (policy.kind: program | lm | remote) and its settings, in the
// generators and the learner alike: the program policy's shape (policy.d_model, ...), the language model's
// (policy.lm.*), the served endpoint's (policy.remote.*), and the LibTorch threads they run on.
#include <cstdint>
#include <string>

#include "policies/lm/lm_policy_options.hpp"
#include "policies/program_policy.hpp"
#include "policies/remote/remote_policy.hpp"

namespace crucible::actors {

struct policy_section : policies::policy_config {
  static constexpr const char* section_name = "policy";
  // Not an aggregate: GCC 12 warns (falsely) that an aggregate-initialised base's string may be
  // uninitialised.
  policy_section() {}
  std::string kind = "program";  ///< program | lm | remote
  int64_t threads = 1;           ///< LibTorch intra-op threads of the policy
  policies::lm_policy_options lm;
  policies::remote_policy_options remote;
  std::string remote_api_key_env;  ///< the environment variable holding the endpoint's key (not the key)
  /// Weights larger than this travel to generators as a versioned file in the run directory
  /// (RUN_DIR/weights/), not inside the message.
  double max_weights_message_mb = 64;
};

}  // namespace crucible::actors
