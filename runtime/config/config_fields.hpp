#pragma once
// A config key bound to the field that holds its value: the one vocabulary in which the core config and the
// sections other layers register (config_sections.hpp) describe their keys, so loading, dumping and the
// unknown-key check walk one list.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace crucible::runtime {

/// plugin_settings: each plugin role's settings, a dotted key to its values.
using settings_map = std::map<std::string, std::map<std::string, std::vector<std::string>>>;

using field_ref =
    std::variant<std::string*, int64_t*, int32_t*, double*, bool*, std::vector<std::string>*,
                 std::vector<double>*, std::vector<int64_t>*, std::map<std::string, int64_t>*, settings_map*>;

/// Keys (a path, "run.max_steps", or relative to a section, "timeout_s") and their fields.
using field_list = std::vector<std::pair<std::string, field_ref>>;

}  // namespace crucible::runtime
