#pragma once
// Tasks are YAML files under kernels/tasks/ (one task per file). Loading validates the whole task
// (chain_shapes) and every error names the file and the key path: "softmax_rows.yaml: ops[1].attrs.s:
// expected a number".
#include <string>
#include <string_view>
#include <vector>

#include "messages/expected.hpp"
#include "messages/task.hpp"

namespace crucible::kernels {

/// Parses and validates one task. `origin` (a file name) prefixes error messages.
expected<task_spec> parse_task_yaml(std::string_view yaml_text, std::string_view origin = "<task>");

expected<task_spec> load_task_file(const std::string& path);

/// Every *.yaml below `dir`, sorted by task name; with a non-empty `target`, only tasks listing it.
/// Duplicate task names are an error.
expected<std::vector<task_spec>> load_task_suite(const std::string& dir, std::string_view target = {});

/// The suite shipped with the source tree (kernels/tasks).
std::string default_task_dir();

}  // namespace crucible::kernels
