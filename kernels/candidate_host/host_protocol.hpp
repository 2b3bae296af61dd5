#pragma once
// The pipe protocol between the CPU eval worker and crucible-candidate-host, the process a CPU candidate runs
// in (DESIGN.md §6, "out of reach"). Both ends are built from this tree, so the frames are fixed-size
// structs, not msgpack: one command in, one reply out, in lock step. Tensors travel as offsets into the two
// shared regions (inputs, mapped read-only in the host; outputs, read-write), never as worker addresses.
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace crucible::kernels::host_protocol {

/// Descriptors the worker hands the host: command pipe (read), reply pipe (write), input region (a read-only
/// descriptor of a memfd), output region (a read-write one).
constexpr int command_fd = 3, reply_fd = 4, inputs_fd = 5, outputs_fd = 6;

constexpr int max_tensors = 16;
constexpr int error_chars = 400;

enum class op : uint32_t {
  loaded = 1,  ///< host -> worker, once: the load's outcome and the census after it
  call = 2,    ///< worker -> host: call crucible_forward; host -> worker: its outcome
  null = 3,    ///< the same round trip without the call (calibrates the protocol's own cost)
  quit = 4,
};

struct tensor_desc {
  uint64_t offset = 0;  ///< bytes from the start of its region
  int32_t dtype = 0;
  int32_t ndim = 0;
  int64_t shape[8] = {};
  int64_t stride[8] = {};
};

struct command {
  op what = op::call;
  int32_t n_inputs = 0;
  tensor_desc inputs[max_tensors];  ///< in the input region
  tensor_desc output;               ///< in the output region
};

struct reply {
  op what = op::loaded;
  int32_t rc = 0;            ///< crucible_forward's return (call); 0 when loaded
  int32_t failed = 0;        ///< 1: the load failed or the call threw (see error)
  int32_t threads = 0;       ///< loaded: threads of the host after the artifact's initialisers ran
  int32_t children = 0;      ///< loaded: 1 when those initialisers left a child process
  int32_t sandboxed = 0;     ///< loaded: 1 when the seccomp filter is in force
  int32_t denied = 0;        ///< system calls the sandbox refused since the previous reply
  int64_t input_write = -1;  ///< call: the offset in the input region the candidate tried to write (it died)
  int32_t disguised_output = 0;  ///< call: 1 when the output was not what it claimed (host_runtime.hpp)
  char denied_names[error_chars] = {};  ///< the first of them, by name ("clone, openat")
  char probes[error_chars] = {};  ///< process probes called since the previous reply (process_probes.hpp)
  char error[error_chars] = {};
};

/// Writes all n bytes (a frame is one struct; both ends use this). Async-signal-safe: the host's fault
/// handler answers with it.
inline bool write_all(int fd, const void* p, size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace crucible::kernels::host_protocol
