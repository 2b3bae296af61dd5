#pragma once
// Length-prefixed frames on a pipe: a 4-byte big-endian length, then that many bytes (one msgpack envelope).
// The eval worker and its client speak this over fds 3 and 4, never over stdout, which candidates may write.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "messages/expected.hpp"

namespace crucible::kernels {

/// Frames larger than this are refused by both sides (a request is a task spec and a path: kilobytes).
constexpr uint32_t max_frame_bytes = 64u << 20;

/// Writes one frame, retrying short writes and EINTR. An error on EPIPE (the reader is gone) or a frame
/// larger than max_frame_bytes.
status write_frame(int fd, std::string_view payload);

/// How read_frame ended.
enum class frame_status { ok, eof, timeout, error };

struct frame_read {
  frame_status status = frame_status::error;
  std::string payload;
  std::string error;  ///< what went wrong, when status is error
};

/// Reads one frame, waiting at most `timeout_s` in all (< 0: forever). EOF before the first byte is `eof`;
/// EOF inside a frame, or a length above max_frame_bytes, is `error`.
frame_read read_frame(int fd, double timeout_s = -1.0);

}  // namespace crucible::kernels
