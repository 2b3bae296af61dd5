#include "actors/options/verifier_section.hpp"

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(verifier_section& s) {
  return {
      {"penalty", &s.penalty},
      {"max_believed_speedup", &s.max_believed_speedup},
  };
}

const bool registered = runtime::register_section<verifier_section>({fields});

}  // namespace
}  // namespace crucible::actors
