#pragma once
// Which control commands a head takes from whom. Anyone who reached the head may ask for `status`. A `scale`
// changes the run: from another host it needs a client CURVE authenticated (a head without keys listens on
// loopback unless cluster.plaintext_remote opens it, and then only local clients may scale), and even then
// it never takes one of the head's own roles to zero, which would leave a stage or the run itself without
// its actors (a node is drained with `--node` instead). A local operator may do anything scale allows.
#include <string>

#include "messages/control.hpp"

namespace crucible::runtime {

struct control_origin {
  std::string address;     ///< the client's IP (empty: ipc:// or inproc://, this host)
  std::string public_key;  ///< its CURVE key (empty without CURVE)
};

/// Whether `address` is this host's (loopback, or no IP at all).
bool local_address(const std::string& address);

/// Why the head refuses `c` from `from`, as a sentence; empty when it takes it.
std::string control_refusal(const control& c, const control_origin& from);

}  // namespace crucible::runtime
