// How long the head may take over a control command: what the client waits, less the answer's way back.
#include "messages/control.hpp"

#include <gtest/gtest.h>

namespace crucible {
namespace {

TEST(Control, TheHeadAnswersWithinTheClientsTimeout) {
  control c;
  EXPECT_DOUBLE_EQ(control_deadline_s(c), 5.0);  // an older client says nothing: the head's default
  c.args["timeout_s"] = "10";
  EXPECT_DOUBLE_EQ(control_deadline_s(c), 9.0);
  c.args["timeout_s"] = "0.01";
  EXPECT_DOUBLE_EQ(control_deadline_s(c), 0.1);  // never less than a tenth of a second
  c.args["timeout_s"] = "100000";
  EXPECT_DOUBLE_EQ(control_deadline_s(c), 300.0);  // nor a request left open for a day
  for (const char* bad : {"", "soon", "-3", "0", "5s", "nan"}) {
    c.args["timeout_s"] = bad;
    EXPECT_DOUBLE_EQ(control_deadline_s(c), 5.0) << bad;
  }
}

}  // namespace
}  // namespace crucible
