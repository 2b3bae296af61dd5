#include "kernels/eval/frame_io.hpp"

#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace crucible::kernels {

namespace {

using clock_type = std::chrono::steady_clock;

// Reads exactly `n` bytes. Returns n on success, 0 on EOF before any byte, -1 on error, -2 on timeout,
// -3 on EOF after some bytes.
ssize_t read_exact(int fd, char* out, size_t n, clock_type::time_point deadline, bool has_deadline,
                   std::string& error) {
  size_t got = 0;
  while (got < n) {
    int wait_ms = -1;
    if (has_deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
      if (left <= 0) return -2;
      wait_ms = static_cast<int>(left > 1000 ? 1000 : left);
    }
    pollfd p{fd, POLLIN, 0};
    int rc = poll(&p, 1, wait_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      error = std::string("poll: ") + std::strerror(errno);
      return -1;
    }
    if (rc == 0) continue;
    ssize_t r = read(fd, out + got, n - got);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      error = std::string("read: ") + std::strerror(errno);
      return -1;
    }
    if (r == 0) return got == 0 ? 0 : -3;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(n);
}

}  // namespace

status write_frame(int fd, std::string_view payload) {
  if (payload.size() > max_frame_bytes)
    return make_error("frame of " + std::to_string(payload.size()) + " bytes exceeds the limit of " +
                      std::to_string(max_frame_bytes));
  uint32_t n = static_cast<uint32_t>(payload.size());
  unsigned char header[4] = {static_cast<unsigned char>(n >> 24), static_cast<unsigned char>(n >> 16),
                             static_cast<unsigned char>(n >> 8), static_cast<unsigned char>(n)};
  std::string buf(reinterpret_cast<char*>(header), 4);
  buf.append(payload.data(), payload.size());

  // A dead reader must be an error value, not a SIGPIPE that kills the runtime: block it for this thread
  // and swallow the one our write raised (the process-wide disposition is not ours to change).
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);

  status result;
  size_t sent = 0;
  while (sent < buf.size()) {
    ssize_t w = write(fd, buf.data() + sent, buf.size() - sent);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      int e = errno;
      result = make_error(std::string("write: ") + std::strerror(e));
      if (e == EPIPE && !was_pending) {
        timespec zero{0, 0};
        sigtimedwait(&pipe_set, nullptr, &zero);
      }
      break;
    }
    sent += static_cast<size_t>(w);
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  return result;
}

frame_read read_frame(int fd, double timeout_s) {
  frame_read out;
  bool has_deadline = timeout_s >= 0;
  auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                          std::chrono::duration<double>(has_deadline ? timeout_s : 0.0));
  unsigned char header[4];
  ssize_t r = read_exact(fd, reinterpret_cast<char*>(header), 4, deadline, has_deadline, out.error);
  if (r == 0) {
    out.status = frame_status::eof;
    return out;
  }
  if (r == -2) {
    out.status = frame_status::timeout;
    return out;
  }
  if (r < 0) {
    if (r == -3) out.error = "end of stream inside a frame header";
    out.status = frame_status::error;
    return out;
  }
  uint32_t n = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) |
               uint32_t{header[3]};
  if (n > max_frame_bytes) {
    out.error =
        "frame length " + std::to_string(n) + " exceeds the limit of " + std::to_string(max_frame_bytes);
    out.status = frame_status::error;
    return out;
  }
  out.payload.resize(n);
  if (n > 0) {
    r = read_exact(fd, out.payload.data(), n, deadline, has_deadline, out.error);
    if (r == -2) {
      out.status = frame_status::timeout;
      return out;
    }
    if (r != static_cast<ssize_t>(n)) {
      if (r == 0 || r == -3) out.error = "end of stream inside a frame";
      out.status = frame_status::error;
      return out;
    }
  }
  out.status = frame_status::ok;
  return out;
}

}  // namespace crucible::kernels
