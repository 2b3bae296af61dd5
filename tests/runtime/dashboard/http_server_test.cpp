#include "runtime/dashboard/http_server.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/runtime/dashboard/raw_http.hpp"

namespace crucible::runtime {
namespace {

using namespace std::chrono_literals;
using namespace testing;

http_response echo(const http_request& req) {
  http_response r;
  r.body = req.method + " " + req.path + " ?" + req.query + " host=" + req.headers.at("host") + " from " +
           req.peer_address + " body=" + req.body;
  return r;
}

std::unique_ptr<http_server> serve(http_handler h, http_server_options o = {}) {
  auto s = http_server::start(o, std::move(h));
  EXPECT_TRUE(s) << s.message();
  return s ? std::move(*s) : nullptr;
}

TEST(HttpServer, AnswersWithTheRequestItParsed) {
  auto s = serve(echo);
  ASSERT_TRUE(s);
  EXPECT_NE(s->port(), 0) << "port 0 takes a free one";
  const std::string r = request(s->port(), "POST", "/a/b?x=1", "", "hello");
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(body_of(r),
            "POST /a/b ?x=1 host=127.0.0.1:" + std::to_string(s->port()) + " from 127.0.0.1 body=hello");
  EXPECT_NE(r.find("Content-Length: "), std::string::npos);
}

TEST(HttpServer, KeepsAConnectionAliveForSeveralRequests) {
  auto s = serve(echo);
  ASSERT_TRUE(s);
  const int fd = connect_loopback(s->port());
  ASSERT_GE(fd, 0);
  const std::string one = "GET /one HTTP/1.1\r\nHost: h\r\n\r\n",
                    two = "GET /two HTTP/1.1\r\nHost: h\r\n\r\n";
  ::send(fd, one.data(), one.size(), MSG_NOSIGNAL);
  EXPECT_NE(read_from(fd, 5s, "/one").find("GET /one"), std::string::npos);
  ::send(fd, two.data(), two.size(), MSG_NOSIGNAL);
  EXPECT_NE(read_from(fd, 5s, "/two").find("GET /two"), std::string::npos);
  ::close(fd);
}

// Bad input never reaches the handler and never stops the server.
TEST(HttpServer, RefusesMalformedAndOversizedRequestsAndGoesOn) {
  std::atomic<int> handled{0};
  http_server_options o;
  o.max_body_bytes = 1024;
  o.io_timeout = 500ms;
  auto s = serve(
      [&](const http_request& r) {
        ++handled;
        return echo(r);
      },
      o);
  ASSERT_TRUE(s);
  EXPECT_EQ(status_of(send_raw(s->port(), "NOT HTTP AT ALL\r\n\r\n")), 400);
  EXPECT_EQ(status_of(request(s->port(), "POST", "/", "", std::string(4096, 'x'))), 413);
  EXPECT_EQ(status_of(send_raw(s->port(),
                               "GET / HTTP/1.1\r\nHost: h\r\n" + std::string(20000, 'a') + ": b\r\n\r\n")),
            413);
  // A client that sends half a request and stalls is dropped at the deadline, answered nothing.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(send_raw(s->port(), "GET / HTTP/1.1\r\nHost:"), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(status_of(request(s->port(), "GET", "/")), 200) << "the server still serves";
}

TEST(HttpServer, AHandlerThatThrowsIsAnInternalError) {
  auto s = serve([](const http_request&) -> http_response { throw std::runtime_error("boom"); });
  ASSERT_TRUE(s);
  const std::string r = request(s->port(), "GET", "/");
  EXPECT_EQ(status_of(r), 500);
  EXPECT_NE(body_of(r).find("boom"), std::string::npos);
}

TEST(HttpServer, ConnectionsBeyondTheLimitAreTurnedAway) {
  http_server_options o;
  o.max_connections = 2;
  auto s = serve(echo, o);
  ASSERT_TRUE(s);
  const int a = connect_loopback(s->port()), b = connect_loopback(s->port());
  std::this_thread::sleep_for(300ms);  // both accepted, each holding its slot waiting for a request
  const std::string third = request(s->port(), "GET", "/");
  EXPECT_EQ(status_of(third), 503) << third;
  ::close(a);
  ::close(b);
  std::string later;
  for (int i = 0; i < 50 && status_of(later) != 200; ++i) {
    std::this_thread::sleep_for(100ms);
    later = request(s->port(), "GET", "/");
  }
  EXPECT_EQ(status_of(later), 200) << "the slots come back when their clients leave";
}

TEST(HttpServer, StreamsEventsUntilTheServerStops) {
  std::atomic<int> sent{0};
  auto s = serve([&](const http_request&) {
    http_response r;
    r.stream = [&](event_sink& sink) {
      while (sink.send("tick", "line one\nline two") && sink.wait(20ms)) ++sent;
    };
    return r;
  });
  ASSERT_TRUE(s);
  const int fd = connect_loopback(s->port());
  const std::string req = "GET /events HTTP/1.1\r\nHost: h\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  const std::string got = read_from(fd, 5s, "data: line two\n\nevent: tick");
  EXPECT_NE(got.find("Content-Type: text/event-stream"), std::string::npos) << got;
  EXPECT_NE(got.find("event: tick\ndata: line one\ndata: line two\n\n"), std::string::npos) << got;
  const auto t0 = std::chrono::steady_clock::now();
  s.reset();  // ends the stream and joins its thread
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_GT(sent.load(), 0);
  ::close(fd);
}

TEST(HttpServer, AStreamEndsWhenItsClientLeaves) {
  std::atomic<bool> ended{false};
  auto s = serve([&](const http_request&) {
    http_response r;
    r.stream = [&](event_sink& sink) {
      while (sink.send("tick", "x") && sink.wait(20ms)) {
      }
      ended = true;
    };
    return r;
  });
  ASSERT_TRUE(s);
  const int fd = connect_loopback(s->port());
  const std::string req = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  read_from(fd, 5s, "event: tick");
  ::close(fd);
  for (int i = 0; i < 100 && !ended; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(ended.load());
}

TEST(HttpServer, ListenAddressesAreCheckedAndABusyPortIsAnError) {
  EXPECT_FALSE(parse_listen("8265"));
  EXPECT_FALSE(parse_listen("127.0.0.1:99999"));
  EXPECT_FALSE(parse_listen("[::1"));
  auto v6 = parse_listen("[::1]:8265");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->first, "::1");
  EXPECT_EQ(parse_listen("localhost:1")->first, "127.0.0.1");
  auto s = serve(echo);
  ASSERT_TRUE(s);
  http_server_options o;
  o.listen = "127.0.0.1:" + std::to_string(s->port());
  auto again = http_server::start(o, echo);
  ASSERT_FALSE(again);
  EXPECT_NE(again.message().find("cannot listen"), std::string::npos) << again.message();
  o.listen = "example.com:80";
  EXPECT_FALSE(http_server::start(o, echo));
}

}  // namespace
}  // namespace crucible::runtime
