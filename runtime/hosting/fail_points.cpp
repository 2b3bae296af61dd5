#include "runtime/hosting/fail_points.hpp"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace crucible::runtime {
namespace {

struct armed_point {
  std::string name;
  long hits = 0;  // the hit that kills; 0: disarmed
};

const armed_point& armed() {
  static const armed_point point = [] {
    armed_point p;
    const char* spec = std::getenv("CRUCIBLE_FAIL_POINT");
    if (!spec) return p;
    const char* colon = std::strrchr(spec, ':');
    if (!colon || colon == spec) return p;
    p.name.assign(spec, colon);
    p.hits = std::strtol(colon + 1, nullptr, 10);
    return p;
  }();
  return point;
}

std::atomic<long> passed{0};

}  // namespace

void fail_point(const char* name) {
  const auto& p = armed();
  if (p.hits <= 0 || p.name != name) return;
  if (passed.fetch_add(1) + 1 == p.hits) std::raise(SIGKILL);
}

}  // namespace crucible::runtime
