#include "policies/remote/completions_client.hpp"

#include "tests/policies/remote/loopback_server.hpp"

#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace crucible::policies {
namespace {

using test::loopback_server;
using tcp = boost::asio::ip::tcp;

// What vLLM answers: choices (here in reverse index order) with text, logprobs and finish_reason.
std::pair<int, std::string> vllm_like(const nlohmann::json& req) {
  nlohmann::json choices = nlohmann::json::array();
  const int n = req.value("n", 1);
  for (int i = n - 1; i >= 0; --i)
    choices.push_back(
        {{"index", i},
         {"text", "kernel " + std::to_string(i)},
         {"logprobs",
          {{"tokens", {"kernel", " " + std::to_string(i)}}, {"token_logprobs", {-0.5, -1.25 - i}}}},
         {"finish_reason", i == 0 ? "stop" : "length"}});
  return {200, nlohmann::json{{"id", "cmpl-1"}, {"object", "text_completion"}, {"choices", choices}}.dump()};
}

TEST(CompletionsClient, SendsTheRequestAndReadsEveryChoiceInIndexOrder) {
  loopback_server server(vllm_like);
  completions_endpoint e;
  e.url = server.url();
  e.model = "qwen2.5-coder";
  e.api_key = "secret";
  completion_request r;
  r.prompt = "## Task: relu";
  r.n = 3;
  r.max_tokens = 64;
  r.temperature = 0.7;
  r.top_p = 0.95;
  r.top_k = 20;
  r.stop = {"```\n\n"};
  r.seed = 5;
  auto out = request_completions(e, r);
  ASSERT_TRUE(out) << out.message();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].text, "kernel 0");
  EXPECT_EQ((*out)[2].text, "kernel 2");
  EXPECT_EQ((*out)[1].tokens, (std::vector<std::string>{"kernel", " 1"}));
  EXPECT_FLOAT_EQ((*out)[1].logprobs[1], -2.25f);
  EXPECT_EQ((*out)[0].finish, remote_finish::stop);
  EXPECT_EQ((*out)[1].finish, remote_finish::length);
  const auto& q = server.last_request_;
  EXPECT_EQ(server.last_target_, "/v1/completions");
  EXPECT_EQ(server.last_auth_, "Bearer secret");
  EXPECT_EQ(q["model"], "qwen2.5-coder");
  EXPECT_EQ(q["prompt"], "## Task: relu");
  EXPECT_EQ(q["n"], 3);
  EXPECT_EQ(q["max_tokens"], 64);
  EXPECT_EQ(q["logprobs"], 1);
  EXPECT_EQ(q["top_k"], 20);
  EXPECT_EQ(q["seed"], 5);
  EXPECT_EQ(q["stop"], nlohmann::json::array({"```\n\n"}));
  EXPECT_DOUBLE_EQ(q["temperature"].get<double>(), 0.7);
}

TEST(CompletionsClient, HttpErrorsCarryTheServersMessage) {
  loopback_server server([](const nlohmann::json&) {
    return std::make_pair(400, std::string(R"({"error": {"message": "max_tokens is too large"}})"));
  });
  completions_endpoint e;
  e.url = server.url();
  auto out = request_completions(e, {});
  ASSERT_FALSE(out);
  EXPECT_NE(out.message().find("HTTP 400"), std::string::npos) << out.message();
  EXPECT_NE(out.message().find("max_tokens is too large"), std::string::npos) << out.message();
}

TEST(CompletionsClient, ASilentServerTimesOutAndARefusedPortIsAnError) {
  loopback_server silent([](const nlohmann::json&) { return std::make_pair(0, std::string()); });
  completions_endpoint e;
  e.url = silent.url();
  e.timeout_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = request_completions(e, {});
  ASSERT_FALSE(out);
  EXPECT_NE(out.message().find("did not answer within 0.3 s"), std::string::npos) << out.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));

  std::string closed_url;
  {
    boost::asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    closed_url = "http://127.0.0.1:" + std::to_string(a.local_endpoint().port()) + "/v1/completions";
  }
  e.url = closed_url;
  auto refused = request_completions(e, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find(closed_url), std::string::npos) << refused.message();
}

// A run that stops does not wait out a server that does not answer: the interrupt is polled while waiting.
TEST(CompletionsClient, AnInterruptEndsTheWaitOnASilentServer) {
  loopback_server silent([](const nlohmann::json&) { return std::make_pair(0, std::string()); });
  completions_endpoint e;
  e.url = silent.url();
  e.timeout_s = 120;  // far beyond the test: only the interrupt can end it
  int polls = 0;
  auto out = request_completions(e, {}, [&] { return ++polls >= 3; });
  ASSERT_FALSE(out);
  EXPECT_NE(out.message().find("interrupted (the run is stopping)"), std::string::npos) << out.message();
  EXPECT_EQ(polls, 3);
}

TEST(CompletionsClient, ATooLargeBodyAndBadUrlsAreErrors) {
  loopback_server big([](const nlohmann::json&) { return std::make_pair(200, std::string(100000, ' ')); });
  completions_endpoint e;
  e.url = big.url();
  e.max_response_bytes = 1000;
  auto out = request_completions(e, {});
  ASSERT_FALSE(out);
  EXPECT_NE(out.message().find("larger than 1000 bytes"), std::string::npos) << "[" << out.message() << "]";
  e.url = "https://example.invalid/v1/completions";
  auto tls = request_completions(e, {});
  ASSERT_FALSE(tls);
  EXPECT_NE(tls.message().find("https is not supported"), std::string::npos);
  e.url = "ftp://x";
  EXPECT_FALSE(request_completions(e, {}));
  e.url = "http://127.0.0.1:port/v1";
  EXPECT_FALSE(request_completions(e, {}));
}

// Bodies that are not the documented shape are refused with the reason, never half-read.
TEST(CompletionsClient, MalformedResponsesSayWhatIsWrong) {
  auto err = [](const std::string& body, int n) {
    auto r = parse_completions(body, n);
    return r ? std::string("accepted") : r.message();
  };
  EXPECT_NE(err("not json", 1).find("not JSON"), std::string::npos);
  EXPECT_NE(err("{}", 1).find("no choices"), std::string::npos);
  EXPECT_NE(err(R"({"choices": []})", 1).find("asked for 1 choices, got 0"), std::string::npos);
  EXPECT_NE(err(R"({"choices": [{"index": 0, "text": "x"}]})", 1).find("no logprobs"), std::string::npos);
  EXPECT_NE(
      err(R"({"choices": [{"index": 0, "text": "x", "logprobs": {"tokens": ["a"], "token_logprobs": []}}]})",
          1)
          .find("do not match"),
      std::string::npos);
  EXPECT_NE(
      err(R"({"choices": [{"index": 0, "text": "x", "logprobs": {"tokens": ["a"], "token_logprobs": [null]}}]})",
          1)
          .find("no finite log-prob"),
      std::string::npos);
  EXPECT_NE(
      err(R"({"choices": [{"index": 0, "text": "x", "logprobs": {"tokens": ["a"], "token_logprobs": [0.5]}}]})",
          1)
          .find("no finite log-prob"),
      std::string::npos);
  const std::string two_zero =
      R"({"choices": [{"index": 0, "text": "x", "logprobs": {"tokens": [], "token_logprobs": []}},)"
      R"({"index": 0, "text": "y", "logprobs": {"tokens": [], "token_logprobs": []}}]})";
  EXPECT_NE(err(two_zero, 2).find("out of range or repeated"), std::string::npos);
  EXPECT_EQ(err(R"({"choices": [{"text": "x", "logprobs": {"tokens": [], "token_logprobs": []}}]})", 1),
            "accepted");
}

}  // namespace
}  // namespace crucible::policies
