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

/// True for the stages that give verdicts (verify, and the judge's second look): they run on the head only.
/// A verdict says what a candidate earns, and the head can check a benchmark's times against its speedups
/// but not a verdict against anything: one from the wire would be believed as sent.
bool stage_stays_on_head(const std::string& stage);

/// The roles that serve those stages (verifier, judge): a node may not offer them.
std::vector<std::string> head_only_roles();

/// compile, benchmark, verify: the order each must keep in a pipeline (each reads what the one before wrote).
const std::vector<std::string>& builtin_stages();

}  // namespace crucible::runtime
