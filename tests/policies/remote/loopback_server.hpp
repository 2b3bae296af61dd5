#pragma once
// A loopback HTTP server for the remote-policy tests: answers `requests` requests with a handler's (status,
// body); with a status of 0 it reads the request and never answers (until the test ends).
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace crucible::policies::test {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

class loopback_server {
 public:
  using handler = std::function<std::pair<int, std::string>(const nlohmann::json& request)>;

  loopback_server(handler h, int requests = 1)
      : acceptor_(io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this, h, requests] {
      for (int i = 0; i < requests; ++i) {
        tcp::socket socket(io_);
        beast::error_code ec;
        acceptor_.accept(socket, ec);
        if (ec) return;
        beast::flat_buffer buf;
        http::request<http::string_body> req;
        http::read(socket, buf, req, ec);
        if (ec) continue;
        nlohmann::json body = nlohmann::json::parse(req.body(), nullptr, false);
        last_request_ = body;
        last_target_ = std::string(req.target());
        last_auth_ = std::string(req[http::field::authorization]);
        auto [status, text] = h(body);
        if (status == 0) {
          release_.get_future().wait_for(std::chrono::seconds(20));
          return;
        }
        http::response<http::string_body> res{static_cast<http::status>(status), 11};
        res.set(http::field::content_type, "application/json");
        res.body() = text;
        res.prepare_payload();
        http::write(socket, res, ec);
        socket.shutdown(tcp::socket::shutdown_both, ec);
      }
    });
  }
  ~loopback_server() {
    release_.set_value();
    // A blocked accept() returns once its listening socket is shut down (Linux); closing alone may not wake
    // it, and a test that made fewer requests than it allowed would hang here.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    beast::error_code ec;
    acceptor_.close(ec);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/completions"; }
  nlohmann::json last_request_;
  std::string last_target_, last_auth_;

 private:
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::promise<void> release_;
  std::thread thread_;
};

}  // namespace crucible::policies::test
