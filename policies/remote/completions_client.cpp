#include "policies/remote/completions_client.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace crucible::policies {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

struct parsed_url {
  std::string host, port = "80", target = "/";
};

expected<parsed_url> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0)
    return make_error("endpoint '" + url +
                      "': https is not supported; serve plain http on loopback or a private network");
  if (url.rfind(scheme, 0) != 0)
    return make_error("endpoint '" + url + "': expected http://HOST[:PORT]/PATH");
  parsed_url u;
  std::string rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.target = rest.substr(slash);
  auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    u.port = authority.substr(colon + 1);
    authority = authority.substr(0, colon);
  }
  u.host = authority;
  if (u.host.empty() || u.port.empty() || u.port.find_first_not_of("0123456789") != std::string::npos)
    return make_error("endpoint '" + url + "': expected http://HOST[:PORT]/PATH");
  return u;
}

remote_finish finish_of(const nlohmann::json& j) {
  if (!j.is_string()) return remote_finish::other;
  const auto s = j.get<std::string>();
  return s == "stop" ? remote_finish::stop : s == "length" ? remote_finish::length : remote_finish::other;
}

}  // namespace

std::string completions_body(const completions_endpoint& e, const completion_request& r) {
  nlohmann::json j = {{"model", e.model},
                      {"prompt", r.prompt},
                      {"n", r.n},
                      {"max_tokens", r.max_tokens},
                      {"temperature", r.temperature},
                      {"top_p", r.top_p},
                      {"logprobs", 1},
                      {"stream", false}};
  if (r.top_k > 0) j["top_k"] = r.top_k;
  if (!r.stop.empty()) j["stop"] = r.stop;
  if (r.seed >= 0) j["seed"] = r.seed;
  return j.dump();
}

expected<std::vector<remote_completion>> parse_completions(const std::string& body, int n) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    return make_error("completions: the response is not JSON (" + body.substr(0, 120) + ")");
  }
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array())
    return make_error("completions: the response has no choices list");
  const auto& choices = j["choices"];
  if (static_cast<int>(choices.size()) != n)
    return make_error("completions: asked for " + std::to_string(n) + " choices, got " +
                      std::to_string(choices.size()));
  std::vector<remote_completion> out(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (size_t k = 0; k < choices.size(); ++k) {
    const auto& c = choices[k];
    const std::string where = "completions: choice " + std::to_string(k);
    int64_t index = static_cast<int64_t>(k);
    if (c.contains("index")) {
      if (!c["index"].is_number_integer()) return make_error(where + ": index is not an integer");
      index = c["index"].get<int64_t>();
    }
    if (index < 0 || index >= n || seen[static_cast<size_t>(index)])
      return make_error(where + ": index " + std::to_string(index) + " is out of range or repeated");
    seen[static_cast<size_t>(index)] = true;
    if (!c.contains("text") || !c["text"].is_string()) return make_error(where + ": no text");
    auto& r = out[static_cast<size_t>(index)];
    r.text = c["text"].get<std::string>();
    r.finish = finish_of(c.value("finish_reason", nlohmann::json()));
    if (!c.contains("logprobs") || !c["logprobs"].is_object())
      return make_error(where + ": no logprobs (the server must return per-token log-probs)");
    const auto& lp = c["logprobs"];
    if (!lp.contains("tokens") || !lp["tokens"].is_array() || !lp.contains("token_logprobs") ||
        !lp["token_logprobs"].is_array() || lp["tokens"].size() != lp["token_logprobs"].size())
      return make_error(where + ": logprobs.tokens and logprobs.token_logprobs do not match");
    for (size_t t = 0; t < lp["tokens"].size(); ++t) {
      const auto& tok = lp["tokens"][t];
      const auto& v = lp["token_logprobs"][t];
      if (!tok.is_string() || !v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() > 1e-6)
        return make_error(where + ": token " + std::to_string(t) + " has no finite log-prob <= 0");
      r.tokens.push_back(tok.get<std::string>());
      r.logprobs.push_back(static_cast<float>(v.get<double>()));
    }
  }
  return out;
}

expected<std::vector<remote_completion>> request_completions(const completions_endpoint& e,
                                                             const completion_request& r,
                                                             const std::function<bool()>& interrupted) {
  if (r.n < 1) return make_error("completions: n must be >= 1");
  auto url = parse_url(e.url);
  if (!url) return url.err();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(e.timeout_s * 1000));
  // Asynchronous operations on a tcp_stream, because only those honour its deadline: connect, write and read
  // all fall within one expiry.
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  http::request<http::string_body> req{http::verb::post, url->target, 11};
  req.set(http::field::host, url->host + ":" + url->port);
  req.set(http::field::content_type, "application/json");
  if (!e.api_key.empty()) req.set(http::field::authorization, "Bearer " + e.api_key);
  req.body() = completions_body(e, r);
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(static_cast<uint64_t>(e.max_response_bytes));
  beast::error_code failure;
  const char* failed_at = "";
  auto fail = [&](beast::error_code ec, const char* where) {
    failure = ec;
    failed_at = where;
  };
  beast::error_code resolve_ec;
  auto endpoints = resolver.resolve(url->host, url->port, resolve_ec);
  if (resolve_ec)
    return make_error("completions: " + e.url + ": cannot resolve '" + url->host +
                      "': " + resolve_ec.message());
  stream.expires_after(timeout);
  stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
    if (ec) return fail(ec, "connect");
    http::async_write(stream, req, [&](beast::error_code ec, size_t) {
      if (ec) return fail(ec, "send");
      // The header first: a declared length over the bound is refused before any of the body is read.
      http::async_read_header(stream, buffer, parser, [&](beast::error_code ec, size_t) {
        if (ec) return fail(ec, "read");
        if (auto len = parser.content_length(); len && *len > static_cast<uint64_t>(e.max_response_bytes))
          return fail(http::error::body_limit, "read");
        http::async_read(stream, buffer, parser, [&](beast::error_code ec, size_t) {
          if (ec) return fail(ec, "read");
          if (parser.get().body().size() > static_cast<size_t>(e.max_response_bytes))
            fail(http::error::body_limit, "read");
        });
      });
    });
  });
  // In slices, so an interrupt (the run stopping) ends a wait on a server that does not answer.
  bool was_interrupted = false;
  while (!io.stopped()) {
    io.run_for(std::chrono::milliseconds(50));
    if (!io.stopped() && interrupted && interrupted()) {
      was_interrupted = true;
      stream.cancel();
      io.run();  // the handlers see operation_aborted and return
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (was_interrupted) return make_error("completions: " + e.url + ": interrupted (the run is stopping)");
  if (failure) {
    if (failure == beast::error::timeout) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", e.timeout_s);
      return make_error("completions: " + e.url + " did not answer within " + secs + " s");
    }
    if (failure == http::error::body_limit)
      return make_error("completions: the response from " + e.url + " is larger than " +
                        std::to_string(e.max_response_bytes) + " bytes");
    return make_error("completions: " + e.url + ": " + failed_at + ": " + failure.message());
  }
  auto res = parser.release();
  if (res.result() != http::status::ok) {
    std::string detail = res.body().substr(0, 300);
    try {
      auto j = nlohmann::json::parse(res.body());
      if (j.contains("error") && j["error"].is_object() && j["error"].contains("message"))
        detail = j["error"]["message"].dump();
      else if (j.contains("message"))
        detail = j["message"].dump();
    } catch (const std::exception&) {
    }
    return make_error("completions: " + e.url + " answered HTTP " + std::to_string(res.result_int()) + ": " +
                      detail);
  }
  return parse_completions(res.body(), r.n);
}

}  // namespace crucible::policies
