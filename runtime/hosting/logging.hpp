#pragma once
// spdlog set-up: a log file in the run directory (everything at the configured level) and the terminal
// (warnings and errors only while the progress line is shown, so the two do not interleave).
#include <string>

namespace crucible::runtime {

/// Installs the default logger. `file` empty: terminal only. Safe to call again (replaces the logger).
void init_logging(const std::string& level, const std::string& file, bool quiet_terminal);

}  // namespace crucible::runtime
