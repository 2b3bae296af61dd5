// The peer client against the real head (and, for a silent head, against a raw ROUTER).
#include "runtime/cluster/wire_peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <mutex>
#include <set>

#include <zmq_addon.hpp>

#include <gtest/gtest.h>

#include "tests/runtime/cluster/wire_test_support.hpp"

namespace crucible::runtime {
namespace {

using namespace test;

// Echoes the payload back, upper-casing the embedded control's command so the answer is visibly new.
void echo_handler(const work_item& w, work_reply reply) {
  work_result r;
  for (const auto& p : w.payload) {
    auto c = decode_embedded<control>(p);
    if (!c) {
      r.status = "error";
      r.error = c.message();
      break;
    }
    for (auto& ch : c->command) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    r.payload.push_back(encode_embedded(*c, "peer"));
  }
  reply(std::move(r));
}

wire_peer_options fast_peer_options(const std::string& endpoint, std::vector<role_offer> roles) {
  wire_peer_options opt;
  opt.endpoint = endpoint;
  opt.roles = std::move(roles);
  for (const auto& o : opt.roles)  // the devices the offers name (a head refuses an index it was not given)
    while (o.device >= static_cast<int32_t>(opt.devices.size()))
      opt.devices.push_back(device_info{"cuda", static_cast<int32_t>(opt.devices.size()), "test GPU", 0});
  opt.handler = echo_handler;
  opt.heartbeat_interval = 100ms;
  opt.liveness = 3;
  opt.reconnect_min = 50ms;
  opt.reconnect_max = 400ms;
  return opt;
}

std::unique_ptr<wire_peer> start_peer(wire_peer_options opt) {
  auto p = wire_peer::start(std::move(opt));
  EXPECT_TRUE(p) << p.message();
  return p ? std::move(*p) : nullptr;
}

// Holds handler calls until released; counts how many run at once.
struct gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int running = 0;
  int max_running = 0;
  int received = 0;

  work_handler handler() {
    return [this](const work_item& w, work_reply reply) {
      {
        std::unique_lock<std::mutex> lock(mu);
        ++received;
        max_running = std::max(max_running, ++running);
        cv.wait(lock, [&] { return open; });
        --running;
      }
      echo_handler(w, std::move(reply));
    };
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu);
    return received;
  }
};

TEST(WirePeer, RegistersAsksForItsCapacityAndAnswersWork) {
  auto head = start_head(fast_head_options());
  auto peer = start_peer(fast_peer_options(head->endpoint(), {{"compiler", 2, -1}}));
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s)) << peer->last_error();
  auto joined = wait_event<peer_joined>(*head, 2s);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->peer_id, peer->peer_id());
  EXPECT_EQ(joined->info.pid, ::getpid());
  auto credit = wait_event<credit_granted>(*head, 2s);
  ASSERT_TRUE(credit);
  EXPECT_EQ(credit->total, 2);

  // 20 items through a capacity of 2: each result brings one more credit.
  int done = 0, sent = 0;
  std::set<std::string> answers;
  while (done < 20) {
    while (sent < 20 && head->dispatch(make_work("compiler", "item" + std::to_string(sent)))) ++sent;
    auto ev = head->next_event(2s);
    ASSERT_TRUE(ev) << "stalled after " << done << " results";
    if (auto* d = std::get_if<work_done>(&*ev)) {
      ASSERT_EQ(d->result.status, "ok") << d->result.error;
      auto c = decode_embedded<control>(d->result.payload.at(0));
      ASSERT_TRUE(c);
      answers.insert(c->command);
      EXPECT_GT(d->result.wall_s, 0.0);
      ++done;
    }
  }
  EXPECT_EQ(answers.size(), 20u);
  EXPECT_EQ(*answers.begin(), "ITEM0");
  // The peer counts a result once its socket took it, which may be after the head has read it.
  EXPECT_TRUE(eventually([&] { return peer->counters().results_sent == 20u; }, 2s))
      << peer->counters().results_sent;
  EXPECT_EQ(peer->counters().results_dropped, 0u);
}

TEST(WirePeer, NeverHoldsMoreWorkThanItsCapacity) {
  auto head = start_head(fast_head_options());
  gate g;
  auto opt = fast_peer_options(head->endpoint(), {{"benchmarker", 2, 0}});
  opt.handler = g.handler();
  opt.handler_threads = 4;  // more threads than capacity: credit, not threads, is the bound
  auto peer = start_peer(opt);
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  int accepted = 0;
  for (int i = 0; i < 6; ++i)
    if (head->dispatch(make_work("benchmarker", "x"))) ++accepted;
  EXPECT_EQ(accepted, 2);
  EXPECT_TRUE(eventually([&] { return g.count() == 2; }, 2s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(g.count(), 2);
  g.release();
  ASSERT_TRUE(wait_event<work_done>(*head, 2s));
  ASSERT_TRUE(wait_event<work_done>(*head, 2s));
  EXPECT_LE(g.max_running, 2);
}

TEST(WirePeer, ManualCreditPullsExactlyWhatItAsks) {
  auto head = start_head(fast_head_options());
  auto opt = fast_peer_options(head->endpoint(), {{"py_stage", 8, -1}});
  opt.auto_credit = false;
  auto peer = start_peer(opt);
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  EXPECT_FALSE(head->dispatch(make_work("py_stage", "x")));  // capacity is not credit
  ASSERT_TRUE(peer->grant_credit("py_stage", 3));
  auto credit = wait_event<credit_granted>(*head, 2s);
  ASSERT_TRUE(credit);
  EXPECT_EQ(credit->total, 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(head->dispatch(make_work("py_stage", "x")));
  EXPECT_FALSE(head->dispatch(make_work("py_stage", "x")));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(wait_event<work_done>(*head, 2s));
  EXPECT_FALSE(head->dispatch(make_work("py_stage", "x")));  // results alone do not re-credit
  EXPECT_FALSE(peer->grant_credit("other_role", 1));
  EXPECT_FALSE(peer->grant_credit("py_stage", 0));
}

TEST(WirePeer, AnswersWorkForARoleItDoesNotRunAsUnsupported) {
  // A head can only send what the peer offered; a raw ROUTER shows what the peer does with the rest.
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:0");
  auto peer = start_peer(fast_peer_options(router.get(zmq::sockopt::last_endpoint), {{"compiler", 1, -1}}));
  std::vector<zmq::message_t> frames;
  ASSERT_TRUE(zmq::recv_multipart(router, std::back_inserter(frames)));
  auto ready = decode_as<peer_ready>(frames.at(1).to_string_view());
  ASSERT_TRUE(ready);
  auto send = [&](const auto& msg) {
    router.send(zmq::buffer(frames[0].to_string()), zmq::send_flags::sndmore);
    router.send(zmq::buffer(encode(msg, "fake")), zmq::send_flags::none);
  };
  send(peer_registered{true, "", ready->peer_id, "fake", 100, 3});
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 2s));
  send(make_work("linker", "x", 55));
  for (int i = 0; i < 10; ++i) {
    std::vector<zmq::message_t> in;
    ASSERT_TRUE(zmq::recv_multipart(router, std::back_inserter(in)));
    auto env = decode(in.at(1).to_string_view());
    ASSERT_TRUE(env);
    if (env->kind != "work_result") continue;
    auto r = env->as<work_result>();
    EXPECT_EQ(r->request_id, 55u);
    EXPECT_EQ(r->status, "unsupported");
    return;
  }
  FAIL() << "no work_result";
}

TEST(WirePeer, AHandlerThatThrowsAnswersAnError) {
  auto head = start_head(fast_head_options());
  auto opt = fast_peer_options(head->endpoint(), {{"compiler", 1, -1}});
  opt.handler = [](const work_item&, work_reply) { throw std::runtime_error("boom"); };
  auto peer = start_peer(opt);
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  ASSERT_TRUE(head->dispatch(make_work("compiler", "x")));
  auto done = wait_event<work_done>(*head, 2s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->result.status, "error");
  EXPECT_NE(done->result.error.find("boom"), std::string::npos);
}

TEST(WirePeer, ReRegistersByItselfWhenTheHeadComesBack) {
  auto head = start_head(fast_head_options());
  std::string endpoint = head->endpoint();
  auto peer = start_peer(fast_peer_options(endpoint, {{"compiler", 1, -1}}));
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  head.reset();  // says goodbye: the peer drops its session
  ASSERT_TRUE(peer->wait_for(peer_state::connecting, 2s));
  std::this_thread::sleep_for(300ms);  // a few failed attempts against nothing
  wire_head_options opt = fast_head_options();
  opt.endpoint = endpoint;
  head = start_head(opt);
  ASSERT_TRUE(head);
  auto joined = wait_event<peer_joined>(*head, 5s);
  ASSERT_TRUE(joined) << peer->last_error();
  EXPECT_EQ(joined->peer_id, peer->peer_id());
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 2s));
  EXPECT_EQ(peer->counters().registrations, 2u);
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  ASSERT_TRUE(head->dispatch(make_work("compiler", "again")));
  auto done = wait_event<work_done>(*head, 2s);
  ASSERT_TRUE(done);
  EXPECT_EQ(decode_embedded<control>(done->result.payload.at(0))->command, "AGAIN");
}

TEST(WirePeer, DetectsASilentHeadAndReconnects) {
  // A fake head that answers the first ready and then never says anything again.
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:0");
  auto opt = fast_peer_options(router.get(zmq::sockopt::last_endpoint), {{"compiler", 1, -1}});
  auto peer = start_peer(opt);
  std::vector<zmq::message_t> first;
  ASSERT_TRUE(zmq::recv_multipart(router, std::back_inserter(first)));
  auto ready = decode_as<peer_ready>(first.at(1).to_string_view());
  ASSERT_TRUE(ready);
  router.send(zmq::buffer(first[0].to_string()), zmq::send_flags::sndmore);
  router.send(zmq::buffer(encode(peer_registered{true, "", ready->peer_id, "fake", 100, 3})),
              zmq::send_flags::none);
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 2s));
  auto silent_since = std::chrono::steady_clock::now();
  // The peer heartbeats, hears nothing back for 3 x 100 ms, and comes back on a new connection.
  router.set(zmq::sockopt::rcvtimeo, 3000);
  for (;;) {
    std::vector<zmq::message_t> frames;
    ASSERT_TRUE(zmq::recv_multipart(router, std::back_inserter(frames))) << "the peer never came back";
    auto env = decode(frames.at(1).to_string_view());
    ASSERT_TRUE(env);
    if (env->kind != "ready") continue;
    EXPECT_NE(frames[0].to_string(), first[0].to_string()) << "expected a new connection";
    EXPECT_EQ(env->as<peer_ready>()->peer_id, ready->peer_id);
    break;
  }
  auto took = std::chrono::steady_clock::now() - silent_since;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s);
  EXPECT_EQ(peer->state(), peer_state::connecting);
}

TEST(WirePeer, RetriesWithBoundedBackoffWhileNoHeadListens) {
  // A port that is bound but not listening: connections are refused, and no other test can take it.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto opt = fast_peer_options(endpoint, {{"compiler", 1, -1}});
  opt.register_timeout = 100ms;
  auto peer = start_peer(opt);
  std::this_thread::sleep_for(1500ms);
  auto attempts = peer->counters().connect_attempts;
  // 100 ms waits plus 50, 100, 200, 400, 400 ... ms of backoff: a handful, neither one nor a storm.
  EXPECT_GE(attempts, 3u);
  EXPECT_LE(attempts, 8u);
  EXPECT_EQ(peer->state(), peer_state::connecting);
  EXPECT_NE(peer->last_error().find("no answer to ready"), std::string::npos) << peer->last_error();
  peer.reset();
  ::close(fd);
}

TEST(WirePeer, DrainFinishesWorkInHandThenLeaves) {
  auto head = start_head(fast_head_options());
  gate g;
  auto opt = fast_peer_options(head->endpoint(), {{"benchmarker", 2, 0}});
  opt.handler = g.handler();
  opt.handler_threads = 2;
  auto peer = start_peer(opt);
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  ASSERT_TRUE(head->dispatch(make_work("benchmarker", "a")));
  ASSERT_TRUE(head->dispatch(make_work("benchmarker", "b")));
  ASSERT_TRUE(eventually([&] { return g.count() == 2; }, 2s));
  peer->drain("maintenance");
  auto draining = wait_event<peer_draining>(*head, 2s);
  ASSERT_TRUE(draining);
  EXPECT_EQ(draining->reason, "maintenance");
  EXPECT_EQ(peer->state(), peer_state::draining);
  EXPECT_FALSE(head->dispatch(make_work("benchmarker", "c")));
  g.release();
  std::vector<wire_event> seen;
  auto left = wait_event<peer_left>(*head, 3s, {}, &seen);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_TRUE(left->in_flight.empty()) << "drained work must be answered before the peer leaves";
  int results = 0;
  for (const auto& ev : seen) results += std::holds_alternative<work_done>(ev);
  EXPECT_EQ(results, 2);
  EXPECT_TRUE(peer->wait_for(peer_state::stopped, 2s));
}

TEST(WirePeer, TheHeadCanAskAPeerToDrain) {
  auto head = start_head(fast_head_options());
  auto peer = start_peer(fast_peer_options(head->endpoint(), {{"benchmarker", 1, 0}}));
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  auto joined = wait_event<peer_joined>(*head, 2s);
  ASSERT_TRUE(joined);
  ASSERT_TRUE(head->request_drain(joined->peer_id, "scale down"));
  auto left = wait_event<peer_left>(*head, 3s);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_TRUE(peer->wait_for(peer_state::stopped, 2s));
}

TEST(WirePeer, StopHandsItsInFlightWorkBackToTheHead) {
  auto head = start_head(fast_head_options());
  gate g;
  auto opt = fast_peer_options(head->endpoint(), {{"benchmarker", 1, 0}});
  opt.handler = g.handler();
  auto peer = start_peer(opt);
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s));
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  auto d = head->dispatch(make_work("benchmarker", "a", 77));
  ASSERT_TRUE(d);
  ASSERT_TRUE(eventually([&] { return g.count() == 1; }, 2s));
  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);
    g.release();  // stop() waits for running handlers
  });
  peer->stop();
  releaser.join();
  auto left = wait_event<peer_left>(*head, 2s);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_EQ(left->in_flight, std::vector<uint64_t>{77});
  EXPECT_EQ(peer->state(), peer_state::stopped);
}

TEST(WirePeer, ARefusedRegistrationIsFinalAndSaysWhy) {
  auto opt = fast_head_options();
  opt.known_roles = {"compiler"};
  auto head = start_head(opt);
  auto peer = start_peer(fast_peer_options(head->endpoint(), {{"gpu_magic", 1, 0}}));
  ASSERT_TRUE(peer->wait_for(peer_state::refused, 3s));
  EXPECT_NE(peer->last_error().find("gpu_magic"), std::string::npos) << peer->last_error();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(peer->counters().connect_attempts, 1u);
  EXPECT_TRUE(head->peers().empty());
}

TEST(WirePeer, ManyThreadsDispatchingToSeveralPeersAnswerEveryRequestOnce) {
  // Events through the callback (the I/O thread), dispatch from four threads: the API is thread-safe and
  // credit is never overspent, whoever calls.
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, int> answers;
  auto opt = fast_head_options();
  opt.on_event = [&](wire_event ev) {
    if (auto* d = std::get_if<work_done>(&ev)) {
      std::lock_guard<std::mutex> lock(mu);
      ++answers[d->result.request_id];
      cv.notify_all();
    }
  };
  auto head = start_head(opt);
  std::vector<std::unique_ptr<wire_peer>> peers;
  for (int i = 0; i < 3; ++i) {
    auto popt = fast_peer_options(head->endpoint(), {{"compiler", 3, -1}});
    popt.handler_threads = 2;
    peers.push_back(start_peer(popt));
  }
  for (auto& p : peers) ASSERT_TRUE(p->wait_for(peer_state::registered, 3s));
  constexpr int per_thread = 150;
  std::atomic<size_t> max_in_flight{0};
  std::vector<std::thread> senders;
  std::vector<std::vector<uint64_t>> sent(4);
  for (int t = 0; t < 4; ++t)
    senders.emplace_back([&, t] {
      for (int i = 0; i < per_thread;) {
        auto d = head->dispatch(make_work("compiler", "t" + std::to_string(t)));
        if (!d) {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait_for(lock, 20ms);  // no credit anywhere: wait for an answer
          continue;
        }
        sent[t].push_back(d->request_id);
        ++i;
        for (const auto& p : head->peers()) {
          size_t n = p.in_flight.size(), seen = max_in_flight;
          while (n > seen && !max_in_flight.compare_exchange_weak(seen, n)) {
          }
        }
      }
    });
  for (auto& s : senders) s.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return answers.size() == 4 * per_thread; }))
        << answers.size() << " answers";
    for (const auto& ids : sent)
      for (auto id : ids) EXPECT_EQ(answers[id], 1) << "request " << id;
  }
  EXPECT_LE(max_in_flight.load(), 3u) << "a peer was sent more work than its credit";
  uint64_t received = 0;
  for (auto& p : peers) {
    auto c = p->counters();
    EXPECT_LE(c.work_received, c.credits_sent) << "a peer received more than it asked for";
    received += c.work_received;
  }
  EXPECT_EQ(received, 4u * per_thread);
  EXPECT_EQ(head->counters().stale_results, 0u);
}

TEST(WirePeer, StartRejectsBadOptions) {
  wire_peer_options opt;
  EXPECT_FALSE(wire_peer::start(opt));  // no endpoint
  opt.endpoint = "not-an-endpoint";
  auto bad = wire_peer::start(opt);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("cannot connect"), std::string::npos) << bad.message();
  opt.endpoint = "tcp://127.0.0.1:1";
  opt.roles = {{"compiler", 1, -1}};
  EXPECT_FALSE(wire_peer::start(opt));  // roles without a handler
  opt.handler = echo_handler;
  opt.curve = curve_client_keys{{"short", "keys"}, "x"};
  EXPECT_FALSE(wire_peer::start(opt));
}

}  // namespace
}  // namespace crucible::runtime
