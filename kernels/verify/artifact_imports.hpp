#pragma once
// The dynamic-symbol imports of a compiled candidate, judged like its source (DESIGN.md §6). A source check
// can be dodged (a macro, token pasting, an extern declaration of a mangled LibTorch symbol); the undefined
// symbols of the shared object cannot: whatever the candidate calls outside itself is listed there.
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::kernels {

/// Undefined (imported) dynamic symbols of the ELF shared object at `path`, as in its .dynsym.
expected<std::vector<std::string>> imported_symbols(const std::string& path);

/// Evidence tags "flag:symbol" for imports that mean a hack: the reference's libraries or the worker's
/// own code (calls_reference), threads (spawns_thread), clocks (reads_clock), dlopen/dlsym
/// (dynamic_loading), processes and syscalls (system_call). Flags match static_source_flags.
std::vector<std::string> suspicious_imports(const std::vector<std::string>& imports);

}  // namespace crucible::kernels
