#pragma once
// The config an evaluating subcommand (eval, rejudge) runs under: the file given, or the embedded default of
// its target (configs/local.yaml for cpu, configs/gpu.yaml for cuda), with `target=` set first so the
// command line's --target wins over the file's.
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/config/config.hpp"

namespace crucible::cli {

expected<runtime::config> target_config(const std::string& config_path, std::vector<std::string> overrides,
                                        const std::string& target);

}  // namespace crucible::cli
