#pragma once
// A small HTTP/1.1 server for the head's dashboard and /metrics: Boost.Beast parses requests and writes
// responses; one thread per connection (a dashboard has few clients) over sockets with deadlines, so a
// client that stalls, floods or vanishes costs one bounded slot and never the run. A response may be a
// server-sent event stream, written on its connection's thread until the client leaves or the server stops.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::runtime {

struct http_request {
  std::string method;                          ///< GET, POST, ...
  std::string path;                            ///< the target without its query, e.g. /api/state
  std::string query;                           ///< after '?', undecoded
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string body;
  std::string peer_address;  ///< the client's IP
};

/// Where a stream handler writes server-sent events.
class event_sink {
 public:
  virtual ~event_sink() = default;
  /// Sends one event; false once the client has gone or the server is stopping.
  virtual bool send(const std::string& event, const std::string& data) = 0;
  /// Waits up to `d`; false when the server is stopping or the client has gone.
  virtual bool wait(std::chrono::milliseconds d) = 0;
};

struct http_response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  /// Set: the response is a text/event-stream, and this writes its events until it returns.
  std::function<void(event_sink&)> stream;
};

using http_handler = std::function<http_response(const http_request&)>;

struct http_server_options {
  std::string listen = "127.0.0.1:0";  ///< HOST:PORT; port 0 takes any free one
  size_t max_connections = 32;         ///< more are answered 503 and closed
  size_t max_body_bytes = 64 * 1024;
  std::chrono::milliseconds io_timeout{10000};  ///< a request must arrive, and a write drain, within this
};

class http_server {
 public:
  /// Binds and starts serving on a thread of its own. Errors: an unparsable HOST:PORT, a busy port.
  static expected<std::unique_ptr<http_server>> start(const http_server_options& options,
                                                      http_handler handler);
  /// Stops accepting, ends every stream and connection, joins their threads.
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  const std::string& host() const;
  uint16_t port() const;

  struct impl;

 private:
  explicit http_server(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

/// HOST:PORT split; IPv6 hosts in brackets ([::1]:8265). Errors name what is wrong.
expected<std::pair<std::string, uint16_t>> parse_listen(const std::string& listen);

}  // namespace crucible::runtime
