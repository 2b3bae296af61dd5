#pragma once
// What crucible-candidate-host does to itself around loading a candidate: before, drop every privilege and
// refuse what could start or reach anything (threads, processes, handlers, timers, other processes' memory),
// so the artifact's initialisers run with no way to leave work behind; after, a seccomp allowlist for the
// rest of its life. Allowed then: memory (never executable), the pipes it already holds, clocks, sleeping,
// exiting. Refused with EPERM, and counted: threads, processes, files, sockets, signals, timers, ptrace,
// executable memory, changing page protections, and everything else.
#include <cstdint>
#include <string>

namespace crucible::kernels::sandbox {

/// Before the artifact is loaded: no capabilities (a root worker's host keeps none, so it cannot read
/// another process's memory), no new privileges, and a first filter that lets the dynamic loader work but
/// refuses threads, processes, ptrace, cross-process memory, sockets, signal handlers, timers, scheduling and
/// writing files, so the artifact's initialisers can start nothing. Empty on success, else why not.
std::string seal_for_loading();

/// After loading: the allowlist, on every thread, on top of the first filter.
/// Empty on success, else why not (the host then refuses to run the candidate).
std::string install();

/// Refused system calls since the last take: their count, and the first few by name ("clone, openat").
int take_denied(std::string& names);

}  // namespace crucible::kernels::sandbox
