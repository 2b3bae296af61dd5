#pragma once
// Functions a kernel has no use for and an adversary reaches for, defined by crucible-candidate-host itself
// so a candidate that calls them calls these: the allocator's knobs and its heap (mallopt, malloc_trim,
// mallinfo, sbrk: baseline tuning and heap scans), the environment (setenv, putenv: thread counts of the
// libraries the baseline uses), and resource usage (getrusage: context switches that tell phases apart).
// Each forwards to the C library, so the candidate sees no difference, and is recorded once armed (after
// the host's own set-up). Inside the host none of them reaches the baseline; the record is the evidence of
// the attempt.
#include <string>

namespace crucible::kernels::process_probes {

/// Starts recording (the host's own calls before this are not the candidate's).
void arm();

/// The C library's dlopen and dlsym, for the host's own use (its calls through the probes would count).
void* real_dlopen(const char* file, int mode);
void* real_dlsym(void* handle, const char* name);

/// Names called since the last take ("mallopt, sbrk"), empty when none.
std::string take();

}  // namespace crucible::kernels::process_probes
