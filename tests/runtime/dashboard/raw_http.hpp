#pragma once
// A test's HTTP client: raw bytes over a loopback socket, so a test can send what no well-behaved client
// would (a torn request, an oversized body, a foreign Host) and read exactly what the server wrote.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace crucible::runtime::testing {

inline int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Reads until the server closes, `until` appears, or `timeout` passes.
inline std::string read_from(int fd, std::chrono::milliseconds timeout, const std::string& until = "") {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  return out;
}

/// Sends `request` as is and returns everything the server wrote before it closed (or 5 s passed).
inline std::string send_raw(uint16_t port, const std::string& request) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out = read_from(fd, std::chrono::seconds(5));
  ::close(fd);
  return out;
}

/// A one-shot request with Connection: close.
inline std::string request(uint16_t port, const std::string& method, const std::string& target,
                           const std::string& headers = "", const std::string& body = "") {
  return send_raw(port, method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                            "\r\nConnection: close\r\n" + headers +
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

inline std::string body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

inline int status_of(const std::string& response) {
  return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
}

}  // namespace crucible::runtime::testing
