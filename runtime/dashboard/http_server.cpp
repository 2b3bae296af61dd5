#include "runtime/dashboard/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

namespace crucible::runtime {

namespace http = boost::beast::http;
using std::chrono::milliseconds;

expected<std::pair<std::string, uint16_t>> parse_listen(const std::string& listen) {
  std::string host, port;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':')
      return make_error("'" + listen + "' is not [IPV6]:PORT");
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos)
      return make_error("'" + listen + "' is not HOST:PORT (e.g. 127.0.0.1:8265)");
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host.empty() || host == "*") host = "0.0.0.0";
  if (host == "localhost") host = "127.0.0.1";
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
      std::stoi(port) > 65535)
    return make_error("'" + listen + "': the port must be a number from 0 to 65535");
  return std::make_pair(host, static_cast<uint16_t>(std::stoi(port)));
}

namespace {

// Sends all of `data` unless the peer is gone, the deadline passes or the server stops.
bool send_all(int fd, const char* data, size_t size, milliseconds timeout,
              const std::atomic<bool>& stopping) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (size > 0) {
    if (stopping.load()) return false;
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, 100);
  }
  return true;
}

class socket_sink final : public event_sink {
 public:
  socket_sink(int fd, milliseconds timeout, const std::atomic<bool>& stopping)
      : fd_(fd), timeout_(timeout), stopping_(stopping) {}
  bool send(const std::string& event, const std::string& data) override {
    std::string frame = "event: " + event + "\n";
    size_t from = 0;
    do {  // a data field per line: an event's data may not hold a bare newline
      size_t end = data.find('\n', from);
      if (end == std::string::npos) end = data.size();
      frame += "data: " + data.substr(from, end - from) + "\n";
      from = end + 1;
    } while (from < data.size());
    frame += "\n";
    return alive_ = alive_ && send_all(fd_, frame.data(), frame.size(), timeout_, stopping_);
  }
  bool wait(milliseconds d) override {
    const auto until = std::chrono::steady_clock::now() + d;
    while (alive_ && !stopping_.load() && std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        // A client of a stream sends nothing more: readable means it closed (or misbehaves; either way,
        // done).
        alive_ = false;
      }
    }
    return alive_ && !stopping_.load();
  }

 private:
  int fd_;
  milliseconds timeout_;
  const std::atomic<bool>& stopping_;
  bool alive_ = true;
};

}  // namespace

struct http_server::impl {
  http_server_options options;
  http_handler handler;
  std::string host;
  uint16_t port = 0;
  int listen_fd = -1;
  std::atomic<bool> stopping{false};
  std::thread acceptor;

  struct connection {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::mutex mu;
  std::list<connection> connections;

  void reap(bool all) {
    std::list<connection> finished;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto it = connections.begin(); it != connections.end();) {
        auto next = std::next(it);
        if (all || it->done.load()) finished.splice(finished.end(), connections, it);
        it = next;
      }
    }
    for (auto& c : finished) {
      if (!c.done.load()) ::shutdown(c.fd, SHUT_RDWR);
      if (c.thread.joinable()) c.thread.join();
      ::close(c.fd);
    }
  }

  void accept_loop() {
    while (!stopping.load()) {
      pollfd p{listen_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) {
        reap(false);
        continue;
      }
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const int fd =
          ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) continue;
      char ip[INET6_ADDRSTRLEN] = "";
      if (from.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&from)->sin_addr, ip, sizeof ip);
      else if (from.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&from)->sin6_addr, ip, sizeof ip);
      reap(false);
      std::lock_guard<std::mutex> lock(mu);
      if (connections.size() >= options.max_connections) {
        static const char busy[] =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: "
            "1\r\n\r\n";
        send_all(fd, busy, sizeof busy - 1, milliseconds(200), stopping);
        ::close(fd);
        continue;
      }
      connections.emplace_back();
      auto& c = connections.back();
      c.fd = fd;
      c.thread = std::thread([this, &c, peer = std::string(ip)] {
        serve(c.fd, peer);
        c.done.store(true);
      });
    }
  }

  // Reads one request; false at the end of the connection (closed, timed out, stopping, or answered 4xx).
  bool read_request(int fd, std::string& pending, http_request& out, bool& keep_alive) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(options.max_body_bytes);
    parser.eager(true);
    const auto deadline = std::chrono::steady_clock::now() + options.io_timeout;
    while (!parser.is_done()) {
      if (!pending.empty()) {
        boost::beast::error_code ec;
        const size_t used = parser.put(boost::asio::buffer(pending.data(), pending.size()), ec);
        pending.erase(0, used);
        if (ec == http::error::need_more) ec = {};
        if (ec) {
          const bool large = ec == http::error::body_limit || ec == http::error::header_limit;
          respond_plain(fd, large ? 413 : 400, "bad request: " + ec.message() + "\n");
          return false;
        }
        if (parser.is_done()) break;
        if (used > 0) continue;
      }
      if (stopping.load() || std::chrono::steady_clock::now() >= deadline) return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[8192];
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        return false;
      }
      pending.append(buf, static_cast<size_t>(n));
    }
    auto& req = parser.get();
    out.method = std::string(req.method_string());
    const std::string target(req.target());
    const size_t q = target.find('?');
    out.path = target.substr(0, q);
    out.query = q == std::string::npos ? "" : target.substr(q + 1);
    out.headers.clear();
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      out.headers[name] = std::string(f.value());
    }
    out.body = std::move(req.body());
    keep_alive = req.keep_alive();
    return true;
  }

  void respond_plain(int fd, int status, const std::string& text) {
    http_response r;
    r.status = status;
    r.body = text;
    write_response(fd, r, false);
  }

  bool write_response(int fd, const http_response& r, bool keep_alive) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
    res.set(http::field::content_type, r.content_type);
    res.set(http::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keep_alive);
    res.body() = r.body;
    res.prepare_payload();
    std::ostringstream os;
    os << res;
    const std::string bytes = os.str();
    return send_all(fd, bytes.data(), bytes.size(), options.io_timeout, stopping);
  }

  void serve(int fd, const std::string& peer) {
    std::string pending;
    http_request req;
    bool keep_alive = false;
    while (!stopping.load() && read_request(fd, pending, req, keep_alive)) {
      req.peer_address = peer;
      http_response r;
      try {
        r = handler(req);
      } catch (const std::exception& e) {
        spdlog::warn("dashboard: {} {} failed: {}", req.method, req.path, e.what());
        r = http_response{};
        r.status = 500;
        r.body = std::string("internal error: ") + e.what() + "\n";
      }
      if (r.stream) {
        std::string head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
            "X-Accel-Buffering: no\r\nConnection: close\r\n\r\n";
        if (!send_all(fd, head.data(), head.size(), options.io_timeout, stopping)) return;
        socket_sink sink(fd, options.io_timeout, stopping);
        try {
          r.stream(sink);
        } catch (const std::exception& e) {
          spdlog::warn("dashboard: the stream {} ended: {}", req.path, e.what());
        }
        return;
      }
      if (!write_response(fd, r, keep_alive) || !keep_alive) return;
    }
  }
};

expected<std::unique_ptr<http_server>> http_server::start(const http_server_options& options,
                                                          http_handler handler) {
  auto where = parse_listen(options.listen);
  if (!where) return where.err();
  auto m = std::make_unique<impl>();
  m->options = options;
  m->handler = std::move(handler);
  m->host = where->first;
  in6_addr v6{};
  in_addr v4{};
  const bool is_v6 = ::inet_pton(AF_INET6, m->host.c_str(), &v6) == 1;
  if (!is_v6 && ::inet_pton(AF_INET, m->host.c_str(), &v4) != 1)
    return make_error("'" + options.listen + "': the host must be an IP address (127.0.0.1, 0.0.0.0, [::1])");
  const int fd = ::socket(is_v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return make_error(std::string("cannot open a socket: ") + std::strerror(errno));
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (is_v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_addr = v6;
    a->sin6_port = htons(where->second);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_addr = v4;
    a->sin_port = htons(where->second);
    len = sizeof *a;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return make_error("cannot listen on " + options.listen + ": " + why);
  }
  len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  m->port = ntohs(is_v6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                        : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  m->listen_fd = fd;
  impl* raw = m.get();
  m->acceptor = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<http_server>(new http_server(std::move(m)));
}

http_server::http_server(std::unique_ptr<impl> impl) : impl_(std::move(impl)) {}

http_server::~http_server() {
  impl_->stopping.store(true);
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  impl_->reap(true);
  ::close(impl_->listen_fd);
}

const std::string& http_server::host() const {
  return impl_->host;
}

uint16_t http_server::port() const {
  return impl_->port;
}

}  // namespace crucible::runtime
