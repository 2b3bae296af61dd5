#pragma once
// What the tests of the crucible executable share: run a shell command, collect its output and exit code;
// a fresh temporary directory.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace crucible::test {

struct command_result {
  int exit_code = -1;  ///< -1 when it did not exit normally (or could not start)
  std::string out;     ///< what it printed on stdout (and stderr, where the command redirects it)
};

/// Runs `cmd` through the shell; the caller adds any redirection (" 2>&1", " 2>/dev/null").
inline command_result run_command(const std::string& cmd) {
  command_result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A path under the temporary directory, named after the test and this process, removed if it existed.
inline std::string fresh_temp_dir(const std::string& name) {
  auto d =
      std::filesystem::temp_directory_path() / ("crucible-cli-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

}  // namespace crucible::test
