#include "policies/remote/remote_policy.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/policies/remote/loopback_server.hpp"
#include "tests/policies/test_tasks.hpp"

namespace crucible::policies {
namespace {

using test::loopback_server;

const char* good_answer =
    "## Performance analysis\nOne pass.\n## Algorithm design\nFuse.\n## Code\n```cpp\n#include "
    "<crucible_abi.h>\n"
    "extern \"C\" int crucible_forward(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t) "
    "{ return 0; }\n```\n";

std::pair<int, std::string> two_answers(const nlohmann::json& req) {
  nlohmann::json choices = nlohmann::json::array();
  choices.push_back({{"index", 0},
                     {"text", good_answer},
                     {"logprobs", {{"tokens", {"a", "b"}}, {"token_logprobs", {-0.5, -1.0}}}},
                     {"finish_reason", "stop"}});
  choices.push_back({{"index", 1},
                     {"text", "I would write a kernel, but"},
                     {"logprobs", {{"tokens", {"c"}}, {"token_logprobs", {-2.0}}}},
                     {"finish_reason", "length"}});
  return {200, nlohmann::json{{"choices", choices}}.dump()};
}

TEST(RemotePolicy, SendsTheContrastivePromptAndParsesEachAnswer) {
  loopback_server server(two_answers);
  remote_policy_options o;
  o.endpoint.url = server.url();
  o.endpoint.model = "served";
  o.framing = "chatml";
  o.max_new_tokens = 300;
  auto p = remote_policy::make(o);
  ASSERT_TRUE(p) << p.message();
  EXPECT_FALSE((*p)->trainable());
  EXPECT_EQ((*p)->kind(), policy_kind::remote);
  prompt q;
  q.task = testing::softmax_task();
  q.target = "cpu";
  exemplar e;
  e.source = "// an earlier kernel";
  e.speedup = 1.7;
  q.exemplars = {e};
  auto out = (*p)->sample(q, 2, 0.8, 7);
  ASSERT_TRUE(out) << out.message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE((*out)[0].format_error.empty()) << (*out)[0].format_error;
  EXPECT_NE((*out)[0].source.find("crucible_forward"), std::string::npos);
  EXPECT_EQ((*out)[0].answer, good_answer);
  EXPECT_TRUE((*out)[1].source.empty());
  EXPECT_NE((*out)[1].format_error.find("cut at max_tokens"), std::string::npos) << (*out)[1].format_error;
  EXPECT_TRUE((*out)[0].tokens.empty());  // the server's vocabulary is not ours: nothing to train on
  const auto& req = server.last_request_;
  EXPECT_EQ(req["n"], 2);
  EXPECT_EQ(req["max_tokens"], 300);
  EXPECT_EQ(req["seed"], 7);
  const std::string text = req["prompt"];
  EXPECT_EQ(text.rfind("<|im_start|>", 0), 0u) << text.substr(0, 80);
  EXPECT_NE(text.find("## Task: softmax_scaled"), std::string::npos);
  EXPECT_NE(text.find("1.7x"), std::string::npos);
  EXPECT_NE(text.find("<|im_start|>assistant\n"), std::string::npos);
  EXPECT_FALSE(req["stop"].empty());
  EXPECT_FALSE((*p)->log_probs(q.task, {}, {}, 1.0));
  EXPECT_TRUE((*p)->save_weights().empty());
}

TEST(RemotePolicy, AnUnreachableServerAndABadFramingAreErrors) {
  remote_policy_options o;
  o.framing = "jinja";
  auto bad = remote_policy::make(o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("policy.remote.framing"), std::string::npos);
  loopback_server failing([](const nlohmann::json&) { return std::make_pair(503, std::string("busy")); });
  o.framing = "plain";
  o.endpoint.url = failing.url();
  auto p = remote_policy::make(o);
  ASSERT_TRUE(p) << p.message();
  prompt q;
  q.task = testing::softmax_task();
  auto out = (*p)->sample(q, 1, 1.0, 1);
  ASSERT_FALSE(out);
  EXPECT_NE(out.message().find("remote policy"), std::string::npos) << out.message();
  EXPECT_NE(out.message().find("503"), std::string::npos) << out.message();
}

}  // namespace
}  // namespace crucible::policies
