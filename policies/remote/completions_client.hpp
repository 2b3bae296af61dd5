#pragma once
// A client of an OpenAI-compatible completions endpoint (POST /v1/completions, as vLLM and SGLang serve
// it): n samples of one text prompt with their tokens and per-token log-probs, stop strings, a bound on new
// tokens. The remote policy samples through it; its learner is off (the weights live on the server).
// Plain HTTP (a server on loopback or a private network); every failure — refused connection, timeout,
// an HTTP error, a body that is not the documented shape, too large a body — is an error that says which.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::policies {

struct completions_endpoint {
  std::string url = "http://127.0.0.1:8000/v1/completions";
  std::string model;    ///< the served model's name (the request's "model")
  std::string api_key;  ///< sent as a bearer token when set
  double timeout_s = 300;
  int64_t max_response_bytes = 64 << 20;
};

struct completion_request {
  std::string prompt;
  int n = 1;
  int64_t max_tokens = 512;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;  ///< 0: not sent
  std::vector<std::string> stop;
  int64_t seed = -1;  ///< < 0: not sent
};

enum class remote_finish { stop, length, other };

struct remote_completion {
  std::string text;
  std::vector<std::string> tokens;  ///< as the server spells them
  std::vector<float> logprobs;      ///< per token, as the server reports them
  remote_finish finish = remote_finish::other;
};

/// The request body (JSON) for `r` to `e`.
std::string completions_body(const completions_endpoint& e, const completion_request& r);

/// Parses a response body: exactly `n` choices, ordered by index, each with text, tokens and matching
/// finite log-probs.
expected<std::vector<remote_completion>> parse_completions(const std::string& body, int n);

/// Sends `r` and waits for the answer (at most e.timeout_s, and only while `interrupted`, polled every
/// 50 ms, is false).
expected<std::vector<remote_completion>> request_completions(const completions_endpoint& e,
                                                             const completion_request& r,
                                                             const std::function<bool()>& interrupted = {});

}  // namespace crucible::policies
