#pragma once
// What every candidate host does around its candidate — crucible-candidate-host for a C-ABI artifact,
// crucible-kernelbench-host for a KernelBench module: the two shared regions mapped (inputs read-only, and
// a write to them reported before the process ends), the census of what loading left running, and the loop
// that runs the candidate on the worker's command (host_protocol.hpp).
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/abi/crucible_abi.h"
#include "kernels/candidate_host/host_protocol.hpp"

namespace crucible::kernels::host_runtime {

struct regions {
  char* in = nullptr;
  size_t in_bytes = 0;
  char* out = nullptr;
  size_t out_bytes = 0;
};

/// A host's start: argv is HOST ARTIFACT INPUT_BYTES OUTPUT_BYTES and `extra` more (else `usage` on stderr
/// and exit 2); becomes a subreaper (orphans of what loading forks come back where the census sees them) and
/// maps the regions. Empty on success, else the error for the loaded reply.
std::string start(int argc, char** argv, int extra, const char* usage, regions& r);

/// Sends the loaded reply, failed with `err` when it is not empty, and exits when loading failed.
void report_loaded(host_protocol::reply& loaded, const std::string& err);

/// Maps the input region read-only and the output region read-write from the protocol's descriptors, each
/// page populated now (outside every clock), and reports a write to the inputs. Empty on success.
std::string map_regions(size_t in_bytes, size_t out_bytes, regions& r);

/// Threads of this process (/proc/self/task), -1 when unreadable.
int count_threads();
/// 1 when a child process is still running (those that ended are reaped), else 0.
int running_children();

/// Copies `s` into a reply's fixed text field.
void set_text(char* dst, const std::string& s);

/// Thrown by a host's entry point when the candidate's output is not what it claims (a KernelBench module's
/// tensor subclass whose storage lacks the shape it reports): the call fails and its reply says why, as
/// evidence rather than a wrong answer.
struct disguised_output : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Answers the worker's commands until it closes the pipe or says quit: a call runs `fn` on views into the
/// regions; every reply carries the refused system calls and process probes since the previous one.
[[noreturn]] void serve(crucible_forward_fn fn, const regions& r);

}  // namespace crucible::kernels::host_runtime
