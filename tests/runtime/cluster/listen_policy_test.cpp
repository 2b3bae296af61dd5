// A head without CURVE keys listens on loopback unless the config says otherwise.
#include "runtime/cluster/listen_policy.hpp"

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

cluster_section listening(const std::string& endpoint) {
  cluster_section c;
  c.listen = endpoint;
  return c;
}

TEST(ListenPolicy, AWildcardWithoutKeysNarrowsToLoopbackAndSaysSo) {
  for (const char* any : {"tcp://*:5555", "tcp://0.0.0.0:5555"}) {
    auto plan = plan_listen(listening(any));
    ASSERT_TRUE(plan) << plan.message();
    EXPECT_EQ(plan->endpoint, "tcp://127.0.0.1:5555");
    EXPECT_NE(plan->note.find("loopback only"), std::string::npos) << plan->note;
    EXPECT_NE(plan->note.find("cluster.plaintext_remote"), std::string::npos);
  }
}

TEST(ListenPolicy, AnotherInterfaceWithoutKeysIsAnErrorNamingTheWaysOut) {
  auto plan = plan_listen(listening("tcp://10.0.0.7:5555"));
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.message().find("cluster.secret_key"), std::string::npos) << plan.message();
  EXPECT_NE(plan.message().find("cluster.plaintext_remote: true"), std::string::npos);
}

TEST(ListenPolicy, LoopbackKeysOrAnOptInKeepTheEndpoint) {
  for (const char* local :
       {"tcp://127.0.0.1:0", "tcp://localhost:5555", "tcp://[::1]:5555", "ipc:///tmp/h"}) {
    auto plan = plan_listen(listening(local));
    ASSERT_TRUE(plan) << local;
    EXPECT_EQ(plan->endpoint, local);
    EXPECT_EQ(plan->note, "");
  }
  auto keyed = listening("tcp://*:5555");
  keyed.secret_key = "keys/head.key";
  EXPECT_EQ(plan_listen(keyed)->endpoint, "tcp://*:5555");
  auto open = listening("tcp://10.0.0.7:5555");
  open.plaintext_remote = true;
  EXPECT_EQ(plan_listen(open)->endpoint, "tcp://10.0.0.7:5555");
}

TEST(ListenPolicy, AnEndpointWithoutAPortIsLeftToZeroMQsOwnError) {
  auto plan = plan_listen(listening("tcp://nowhere"));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->endpoint, "tcp://nowhere");
}

}  // namespace
}  // namespace crucible::runtime
