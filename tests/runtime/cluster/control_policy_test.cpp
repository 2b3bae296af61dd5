// Which control commands a head takes from whom (runtime/cluster/control_policy.hpp).
#include "runtime/cluster/control_policy.hpp"

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

control scale(const std::string& role, int32_t count, const std::string& node = "") {
  control c;
  c.command = "scale";
  c.role = role;
  c.count = count;
  if (!node.empty()) c.args["node"] = node;
  return c;
}

TEST(ControlPolicy, ThisHostMayDoAnythingScaleAllows) {
  for (const char* here : {"", "127.0.0.1", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_EQ(control_refusal(scale("verifier", 0), {here, ""}), "") << here;
    EXPECT_EQ(control_refusal(scale("benchmarker", 4), {here, ""}), "") << here;
  }
}

TEST(ControlPolicy, AnotherHostWithoutAKeyMayOnlyAskForStatus) {
  control status;
  status.command = "status";
  EXPECT_EQ(control_refusal(status, {"10.0.0.9", ""}), "");
  const std::string no = control_refusal(scale("benchmarker", 2), {"10.0.0.9", ""});
  EXPECT_NE(no.find("refused"), std::string::npos);
  EXPECT_NE(no.find("CURVE"), std::string::npos) << no;
}

TEST(ControlPolicy, AnAuthenticatedClientOfAnotherHostNeverTakesTheHeadsOwnRoleToZero) {
  const control_origin keyed{"10.0.0.9", "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"};
  EXPECT_EQ(control_refusal(scale("benchmarker", 3), keyed), "");
  EXPECT_NE(control_refusal(scale("verifier", 0), keyed).find("cannot take the head's own 'verifier' to 0"),
            std::string::npos);
  EXPECT_EQ(control_refusal(scale("benchmarker", 0, "node-2"), keyed), "");  // draining a node
}

}  // namespace
}  // namespace crucible::runtime
