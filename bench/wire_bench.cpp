// Cross-process cost of the cluster transport: round-trip latency (p50, p99) and throughput of work items
// through wire_head (ROUTER) -> a forked child process running wire_peer (DEALER) -> back, over loopback
// TCP with msgpack envelopes, next to an in-process CAF request/response carrying the same message. Two
// messages: a compile_result (small, ~150 bytes) and a weights_update of 1 MiB. The child decodes each
// payload into its struct and encodes it again, as a real worker would. Prints a markdown table.
//
//   build/bench/wire_bench [small_round_trips=3000] [large_round_trips=300] [window=16]
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/cluster/wire_head.hpp"
#include "runtime/cluster/wire_peer.hpp"
#include "tests/messages/sample_messages.hpp"

namespace {

using namespace crucible;
using namespace crucible::runtime;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct row {
  std::string transport, message;
  size_t bytes = 0;
  double p50_us = 0, p99_us = 0, per_s = 0;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

weights_update big_weights() {
  weights_update w = test::sample_weights();
  w.bytes.assign(1 << 20, 'w');
  return w;
}

// ---- the child: an echo peer ------------------------------------------------------------------------------

// Decodes the payload into its struct and encodes it again.
void echo(const work_item& w, work_reply reply) {
  work_result r;
  for (const auto& p : w.payload) {
    auto env = decode(std::string_view(p.data(), p.size()));
    if (env && env->kind == "weights_update")
      r.payload.push_back(encode_embedded(*env->as<weights_update>(), "echo"));
    else if (env && env->kind == "compile_result")
      r.payload.push_back(encode_embedded(*env->as<compile_result>(), "echo"));
    else
      r.status = "error";
  }
  reply(std::move(r));
}

[[noreturn]] void child_main(int read_fd, int window) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the bench
  char buf[256] = {};
  ssize_t n = ::read(read_fd, buf, sizeof buf - 1);
  if (n <= 0) ::_exit(1);
  wire_peer_options opt;
  opt.endpoint = std::string(buf, n);
  opt.peer_id = "echo";
  opt.roles = {{"echo", window, -1}};
  opt.handler = echo;
  auto peer = wire_peer::start(opt);
  if (!peer) {
    std::fprintf(stderr, "child: %s\n", peer.message().c_str());
    ::_exit(1);
  }
  (*peer)->wait_for(peer_state::stopped, std::chrono::hours(1));  // the head asks it to drain at the end
  peer->reset();
  ::_exit(0);
}

// ---- the head side ----------------------------------------------------------------------------------------

work_item echo_work(const std::vector<char>& payload) {
  work_item w;
  w.role = "echo";
  w.payload = {payload};
  return w;
}

// Waits for the next result, skipping other events.
bool next_result(wire_head& head) {
  for (;;) {
    auto ev = head.next_event(10s);
    if (!ev) return false;
    if (auto* d = std::get_if<work_done>(&*ev)) return d->result.status == "ok";
  }
}

template <class T>
row wire_row(wire_head& head, const char* label, const T& msg, int round_trips, int window) {
  auto payload = encode_embedded(msg, "head");
  row out{"ZeroMQ + msgpack, cross-process", label, payload.size()};
  auto one = [&] {
    auto d = head.dispatch(echo_work(payload));
    if (!d) {
      std::fprintf(stderr, "dispatch: %s\n", d.message().c_str());
      std::exit(1);
    }
    if (!next_result(head)) std::exit(1);
  };
  for (int i = 0; i < std::max(20, round_trips / 20); ++i) one();  // warm-up
  std::vector<double> us;
  for (int i = 0; i < round_trips; ++i) {
    auto t0 = clock_type::now();
    one();
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  out.p50_us = percentile(us, 0.5);
  out.p99_us = percentile(us, 0.99);
  // Throughput: as many in flight as the peer's credit allows (window).
  int total = round_trips * 2, sent = 0, done = 0;
  auto t0 = clock_type::now();
  while (done < total) {
    while (sent < total && head.dispatch(echo_work(payload))) ++sent;
    if (!next_result(head)) std::exit(1);
    ++done;
  }
  out.per_s = total / std::chrono::duration<double>(clock_type::now() - t0).count();
  return out;
}

caf::behavior echo_actor(caf::event_based_actor*) {
  return {[](stage_atom, const compile_result& c) { return c; },
          [](stage_atom, const weights_update& w) { return w; }};
}

template <class T>
row caf_row(caf::actor_system& sys, const char* label, const T& msg, int round_trips, int window) {
  row out{"CAF, in-process", label, encode(msg).size()};
  auto target = sys.spawn(echo_actor);
  caf::scoped_actor self{sys};
  auto one = [&] {
    self->request(target, caf::infinite, stage_atom::value, msg).receive([](const T&) {}, [](caf::error&) {});
  };
  for (int i = 0; i < std::max(20, round_trips / 20); ++i) one();
  std::vector<double> us;
  for (int i = 0; i < round_trips; ++i) {
    auto t0 = clock_type::now();
    one();
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  out.p50_us = percentile(us, 0.5);
  out.p99_us = percentile(us, 0.99);
  int total = round_trips * 2;
  auto t0 = clock_type::now();
  for (int done = 0; done < total; done += window) {
    using handle_type = decltype(self->request(target, caf::infinite, stage_atom::value, msg));
    std::vector<handle_type> handles;
    for (int i = 0; i < window; ++i)
      handles.push_back(self->request(target, caf::infinite, stage_atom::value, msg));
    for (auto& h : handles) h.receive([](const T&) {}, [](caf::error&) {});
  }
  out.per_s = total / std::chrono::duration<double>(clock_type::now() - t0).count();
  self->send_exit(target, caf::exit_reason::user_shutdown);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int small_n = argc > 1 ? std::atoi(argv[1]) : 3000;
  int large_n = argc > 2 ? std::atoi(argv[2]) : 300;
  int window = argc > 3 ? std::atoi(argv[3]) : 16;
  spdlog::set_level(spdlog::level::warn);

  // Fork before any thread exists; the child learns the head's port through the pipe.
  int fds[2];
  if (::pipe(fds) != 0) return 1;
  pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    ::close(fds[1]);
    child_main(fds[0], window);
  }
  ::close(fds[0]);

  wire_head_options opt;
  opt.endpoint = "tcp://127.0.0.1:0";
  auto head = wire_head::start(opt);
  if (!head) {
    std::fprintf(stderr, "%s\n", head.message().c_str());
    return 1;
  }
  const std::string& endpoint = (*head)->endpoint();
  if (::write(fds[1], endpoint.data(), endpoint.size()) != static_cast<ssize_t>(endpoint.size())) return 1;
  ::close(fds[1]);
  for (;;) {  // the echo peer has joined and granted its credit
    auto ev = (*head)->next_event(10s);
    if (!ev) {
      std::fprintf(stderr, "the echo peer never joined\n");
      return 1;
    }
    if (auto* c = std::get_if<credit_granted>(&*ev); c && c->total == window) break;
  }

  std::vector<row> rows;
  compile_result small = test::sample_compile();
  weights_update large = big_weights();
  rows.push_back(wire_row(**head, "compile_result", small, small_n, window));
  rows.push_back(wire_row(**head, "weights_update (1 MiB)", large, large_n, window));
  (void)(*head)->request_drain("echo", "bench over");
  int st = 0;
  ::waitpid(child, &st, 0);
  head->reset();

  {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    rows.push_back(caf_row(sys, "compile_result", small, small_n, window));
    rows.push_back(caf_row(sys, "weights_update (1 MiB)", large, large_n, window));
  }

  std::printf("round trips: %d small, %d large; throughput with %d in flight\n\n", small_n, large_n, window);
  std::printf("| %-32s | %-22s | %9s | %10s | %10s | %12s | %9s |\n", "transport", "message", "bytes",
              "p50 us", "p99 us", "msgs/s", "MB/s");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|\n", std::string(34, '-').c_str(), std::string(24, '-').c_str(),
              std::string(11, '-').c_str(), std::string(12, '-').c_str(), std::string(12, '-').c_str(),
              std::string(14, '-').c_str(), std::string(11, '-').c_str());
  for (const auto& r : rows)
    std::printf("| %-32s | %-22s | %9zu | %10.1f | %10.1f | %12.0f | %9.1f |\n", r.transport.c_str(),
                r.message.c_str(), r.bytes, r.p50_us, r.p99_us, r.per_s, r.per_s * r.bytes / 1e6);
  std::printf("\nMB/s counts the message one way; each round trip carries it both ways.\n");
  return 0;
}
