// Errors of actors, said as sentences where people read them (`crucible scale`, a node's failed stage).
#include "runtime/hosting/actor_failures.hpp"

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

TEST(ActorFailures, AnErrorMadeWithAMessageIsThatMessage) {
  auto err = caf::make_error(caf::sec::runtime_error, std::string("count must be >= 0"));
  EXPECT_EQ(error_sentence(err), "count must be >= 0");
}

TEST(ActorFailures, AFrameworkErrorIsNamedInWords) {
  auto err = caf::make_error(caf::sec::request_timeout);
  EXPECT_EQ(error_sentence(err), "request timeout");
}

}  // namespace
}  // namespace crucible::runtime
