#include "runtime/dashboard/web_assets.hpp"

#include <cstring>

namespace crucible::runtime {

// Defined in the generated file (build/generated/web_assets.cpp).
extern const web_asset web_asset_table[];
extern const size_t web_asset_count;

const web_asset* find_web_asset(const std::string& name) {
  for (size_t i = 0; i < web_asset_count; ++i)
    if (name == web_asset_table[i].name) return &web_asset_table[i];
  return nullptr;
}

std::string web_asset_text(const std::string& name) {
  const web_asset* a = find_web_asset(name);
  return a ? std::string(reinterpret_cast<const char*>(a->data), a->size) : std::string();
}

}  // namespace crucible::runtime
