#include "cli/target_config.hpp"

namespace crucible::cli {

expected<runtime::config> target_config(const std::string& config_path, std::vector<std::string> overrides,
                                        const std::string& target) {
  overrides.insert(overrides.begin(), "target=" + target);
  if (!config_path.empty()) return runtime::load_config(config_path, overrides);
  const bool cuda = target == "cuda";
  return runtime::parse_config(cuda ? runtime::embedded_gpu_config() : runtime::embedded_default_config(),
                               overrides, cuda ? "embedded configs/gpu.yaml" : "embedded configs/local.yaml");
}

}  // namespace crucible::cli
