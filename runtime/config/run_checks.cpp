#include "runtime/config/run_checks.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/cluster/listen_policy.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::runtime {

namespace {

status check_pipeline(const config& cfg) {
  const auto& p = cfg.pipeline;
  std::string listed;
  for (const auto& s : p) listed += (listed.empty() ? "" : ", ") + s;
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j)
      if (p[i] == p[j])
        return make_error("pipeline: stage '" + p[i] + "' is listed twice ([" + listed + "])");
  size_t last = 0;
  std::string before;
  for (const auto& stage : builtin_stages()) {
    auto it = std::find(p.begin(), p.end(), stage);
    if (it == p.end())
      return make_error("pipeline: stage '" + stage + "' is missing ([" + listed +
                        "]); compile, benchmark and verify are each needed for a reward");
    size_t at = static_cast<size_t>(it - p.begin());
    if (!before.empty() && at < last)
      return make_error("pipeline: stage '" + stage + "' comes before '" + before + "' ([" + listed +
                        "]); it reads what '" + before + "' wrote");
    last = at;
    before = stage;
  }
  return {};
}

}  // namespace

status check_run_plan(const config& cfg, const role_registry* registry) {
  if (registry) {
    std::string known;
    for (const auto& r : registry->roles()) known += (known.empty() ? "" : ", ") + r;
    for (const auto& [role, n] : cfg.roles)
      if (n > 0 && !registry->find(role))
        return make_error("roles." + role + ": no such role (known roles: " + known + ")");
    for (const auto& [role, settings] : cfg.plugin_settings)
      if (!registry->find(role))
        return make_error("plugin_settings." + role + ": no such role (known roles: " + known +
                          "); a plugin role's settings go under its name");
  }
  if (auto st = check_pipeline(cfg); !st) return st;
  if (!cfg.cluster.listen.empty())
    if (auto plan = plan_listen(cfg.cluster); !plan) return plan.err();
  // A head's pipeline stages may be served by nodes that join later (cluster.listen), except those that give
  // verdicts: no node may serve them.
  for (const auto& stage : cfg.pipeline) {
    const bool head_only = stage_info_of(stage).head_only;
    if (!cfg.cluster.listen.empty() && !head_only) continue;
    std::string role = role_of_stage(stage);
    auto it = cfg.roles.find(role);
    if (it == cfg.roles.end() || it->second < 1)
      return make_error("pipeline: stage '" + stage + "' needs at least one '" + role + "' in roles (roles." +
                        role + "), and " +
                        (head_only ? "its verdicts are made on the head: no node may serve it"
                                   : "there is no cluster to serve it"));
  }
  for (const auto& role : head_roles()) {
    auto it = cfg.roles.find(role);
    if (it == cfg.roles.end() || it->second < 1) return make_error("roles." + role + ": expected >= 1");
    if (is_singleton_role(role) && it->second != 1)
      return make_error("roles." + role + ": exactly 1 is supported");
  }
  return {};
}

}  // namespace crucible::runtime
