#pragma once
// The one table of the built-in pipeline stages and the roles that serve them (compile: compiler, benchmark:
// benchmarker, verify: verifier), in pipeline order. A custom stage (a plugin's, the judge's, a remote
// peer's) is served by the role of the same name.
#include <string>
#include <vector>

namespace crucible::runtime {

/// The role that serves `stage`.
std::string role_of_stage(const std::string& stage);

/// The stage `role` serves.
std::string stage_of_role(const std::string& role);

/// True for compile, benchmark and verify.
bool is_builtin_stage(const std::string& stage);

/// compile, benchmark, verify: the order each must keep in a pipeline (each reads what the one before wrote).
const std::vector<std::string>& builtin_stages();

}  // namespace crucible::runtime
