#pragma once
// How other threads hand frames to a wire I/O thread. ZeroMQ sockets are not thread-safe, so only the I/O
// thread touches its ROUTER/DEALER; everyone else pushes onto this mutex-protected queue, and a one-byte
// message on an inproc PAIR wakes the I/O thread's zmq::poll. A wake-up is sent only when the queue goes
// from empty to non-empty, so a burst of pushes costs one wake-up.
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include <zmq.hpp>

namespace crucible::runtime {

template <class Entry>
class wire_outbox {
 public:
  /// Binds the I/O end and connects the sending end inside `ctx` (which must outlive the outbox).
  wire_outbox(zmq::context_t& ctx, const std::string& name)
      : tx_(ctx, zmq::socket_type::pair), rx_(ctx, zmq::socket_type::pair) {
    std::string address = "inproc://crucible-outbox-" + name;
    rx_.set(zmq::sockopt::linger, 0);
    tx_.set(zmq::sockopt::linger, 0);
    rx_.bind(address);
    tx_.connect(address);
  }

  /// Queues `e` and wakes the I/O thread. Any thread.
  void push(Entry e) {
    std::lock_guard<std::mutex> lock(mu_);
    bool was_empty = queue_.empty();
    queue_.push_back(std::move(e));
    if (was_empty) {
      // The mutex also serializes use of tx_, which is shared by every sending thread. A full pipe means
      // a wake-up is already pending, so a failed send loses nothing.
      try {
        (void)tx_.send(zmq::const_buffer("w", 1), zmq::send_flags::dontwait);
      } catch (const zmq::error_t&) {
      }
    }
  }

  /// Everything queued so far, oldest first; consumes the pending wake-ups. I/O thread only.
  std::deque<Entry> take() {
    zmq::message_t m;
    try {
      while (rx_.recv(m, zmq::recv_flags::dontwait)) {
      }
    } catch (const zmq::error_t&) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(queue_, {});
  }

  /// The socket to poll for ZMQ_POLLIN. I/O thread only.
  zmq::socket_t& wake_socket() { return rx_; }

 private:
  std::mutex mu_;
  std::deque<Entry> queue_;
  zmq::socket_t tx_;
  zmq::socket_t rx_;
};

}  // namespace crucible::runtime
