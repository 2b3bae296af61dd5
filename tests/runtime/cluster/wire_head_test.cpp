// The head against raw DEALER sockets: each test sends exactly the frames (and silences) it means to.
#include "runtime/cluster/wire_head.hpp"

#include <gtest/gtest.h>

#include "runtime/pipeline/pipeline_stages.hpp"
#include "tests/runtime/cluster/wire_test_support.hpp"

namespace crucible::runtime {
namespace {

using namespace test;

TEST(WireHead, BindsAFreePortAndReportsIt) {
  auto head = start_head();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << head->endpoint();
  EXPECT_NE(head->endpoint(), "tcp://127.0.0.1:0");
  // The same port twice is a clear error, not an exception.
  wire_head_options opt;
  opt.endpoint = head->endpoint();
  auto second = wire_head::start(opt);
  ASSERT_FALSE(second);
  EXPECT_NE(second.message().find("cannot listen on"), std::string::npos) << second.message();
}

TEST(WireHead, RegistersAPeerAndAcknowledges) {
  auto head = start_head(fast_head_options());
  raw_peer raw(head->endpoint());
  auto ack = raw.join("p1", {{"benchmarker", 2, 0}});
  EXPECT_EQ(ack.peer_id, "p1");
  EXPECT_EQ(ack.head_id, "head");
  EXPECT_EQ(ack.heartbeat_ms, 100);
  EXPECT_EQ(ack.liveness, 5);
  auto joined = wait_event<peer_joined>(*head, 2s);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->peer_id, "p1");
  ASSERT_EQ(joined->info.roles.size(), 1u);
  EXPECT_EQ(joined->info.roles[0].capacity, 2);
  auto peers = head->peers();
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].info.node_id, "test-node");
  EXPECT_TRUE(peers[0].in_flight.empty());
  // The head heartbeats a registered peer.
  auto beat = raw.recv(1s, /*skip_heartbeats=*/false);
  ASSERT_TRUE(beat);
  EXPECT_EQ(beat->kind, "heartbeat");
}

TEST(WireHead, RefusesAnotherProtocolAnUnknownRoleAndAnEmptyId) {
  auto opt = fast_head_options();
  opt.known_roles = {"compiler", "benchmarker"};
  auto head = start_head(opt);
  raw_peer raw(head->endpoint());
  peer_ready r;
  r.peer_id = "old";
  r.protocol = cluster_protocol_version + 1;
  raw.send(r);
  auto ack = raw.recv_as<peer_registered>(2s);
  ASSERT_TRUE(ack);
  EXPECT_FALSE(ack->accepted);
  EXPECT_NE(ack->reason.find("cluster protocol"), std::string::npos) << ack->reason;

  r.protocol = cluster_protocol_version;
  r.roles = {{"reward_shaper", 1, -1}};
  raw.send(r);
  ack = raw.recv_as<peer_registered>(2s);
  ASSERT_TRUE(ack);
  EXPECT_FALSE(ack->accepted);
  EXPECT_NE(ack->reason.find("compiler, benchmarker"), std::string::npos) << ack->reason;

  r.peer_id.clear();
  r.roles = {{"compiler", 1, -1}};
  raw.send(r);
  ack = raw.recv_as<peer_registered>(2s);
  ASSERT_TRUE(ack);
  EXPECT_FALSE(ack->accepted);

  EXPECT_TRUE(head->peers().empty());
  EXPECT_EQ(head->counters().refused, 3u);
  EXPECT_EQ(head->counters().wrong_version, 1u);
  EXPECT_FALSE(head->next_event(50ms));  // no peer_joined
}

TEST(WireHead, RefusesCapacitiesDevicesAndRolesThatDoNotAddUp) {
  auto opt = fast_head_options();
  opt.max_capacity = 8;
  opt.role_refusal = node_refusal;  // as the gateway sets it: verdicts and the run's drivers are the head's
  auto head = start_head(opt);
  raw_peer raw(head->endpoint());
  peer_ready r;
  r.peer_id = "greedy";
  r.devices = {device_info{"cuda", 0, "GPU", 0}};
  const std::pair<std::vector<role_offer>, const char*> bad[] = {
      {{{"compiler", 200000, -1}}, "capacity 200000 (this head takes 1 to 8)"},
      {{{"compiler", 0, -1}}, "capacity 0"},
      {{{"benchmarker", 1, 1}}, "names device 1 of 1 it brings"},
      {{{"compiler", 1, -1}, {"compiler", 2, -1}}, "offered twice"},
      {{{"compiler", 1, -1}, {"verifier", 1, -1}}, "role 'verifier' gives verdicts"},
      {{{"judge", 1, -1}}, "role 'judge' gives verdicts"},
      {{{"generator", 1, -1}}, "role 'generator' runs on the head"},  // it would join the generator pool
      {{{"replay_buffer", 1, -1}}, "role 'replay_buffer' runs on the head"},
  };
  for (const auto& [roles, why] : bad) {
    r.roles = roles;
    raw.send(r);
    auto ack = raw.recv_as<peer_registered>(2s);
    ASSERT_TRUE(ack);
    EXPECT_FALSE(ack->accepted);
    EXPECT_NE(ack->reason.find(why), std::string::npos) << ack->reason;
  }
  EXPECT_TRUE(head->peers().empty());
  EXPECT_EQ(head->counters().refused, std::size(bad));
  r.roles = {{"benchmarker", 8, 0}};  // the most it may offer, on the device it brings
  raw.send(r);
  auto ack = raw.recv_as<peer_registered>(2s);
  ASSERT_TRUE(ack);
  EXPECT_TRUE(ack->accepted) << ack->reason;
}

TEST(WireHead, WorkAndResultRoundTrip) {
  auto head = start_head(fast_head_options());
  raw_peer raw(head->endpoint());
  raw.join("p1", {{"compiler", 1, -1}});
  raw.send(work_credit{"compiler", 1});
  auto credit = wait_event<credit_granted>(*head, 2s);
  ASSERT_TRUE(credit);
  EXPECT_EQ(credit->total, 1);
  auto id = head->send_work("p1", make_work("compiler", "hello"));
  ASSERT_TRUE(id) << id.message();
  auto w = raw.recv_as<work_item>(2s);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->request_id, *id);
  EXPECT_EQ(w->role, "compiler");
  ASSERT_EQ(w->payload.size(), 1u);
  auto inner = decode_embedded<control>(w->payload[0]);
  ASSERT_TRUE(inner) << inner.message();
  EXPECT_EQ(inner->command, "hello");
  EXPECT_EQ(head->peers()[0].in_flight, std::vector<uint64_t>{*id});

  work_result r;
  r.request_id = *id;
  r.payload = {encode_embedded(control{"hello back", "", 0, {}})};
  raw.send(r);
  auto done = wait_event<work_done>(*head, 2s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->peer_id, "p1");
  EXPECT_EQ(done->role, "compiler");
  EXPECT_EQ(done->result.status, "ok");
  auto back = decode_embedded<control>(done->result.payload.at(0));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->command, "hello back");
  EXPECT_TRUE(head->peers()[0].in_flight.empty());

  // The same answer again is stale: dropped, counted, and the peer is told.
  raw.send(r);
  auto err = raw.recv_as<wire_error>(2s);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, "unknown_request");
  EXPECT_EQ(err->request_id, *id);
  EXPECT_EQ(head->counters().stale_results, 1u);
  EXPECT_FALSE(wait_event<work_done>(*head, 100ms));
}

TEST(WireHead, APeerNeverGetsMoreWorkThanItAskedFor) {
  auto head = start_head(fast_head_options());
  raw_peer raw(head->endpoint());
  raw.join("p1", {{"benchmarker", 4, 0}});
  // No credit yet: nothing may be sent, although the peer offered capacity 4.
  auto none = head->send_work("p1", make_work("benchmarker", "x"));
  ASSERT_FALSE(none);
  EXPECT_NE(none.message().find("no credit"), std::string::npos) << none.message();
  raw.send(work_credit{"benchmarker", 2});
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  EXPECT_TRUE(head->send_work("p1", make_work("benchmarker", "a")));
  EXPECT_TRUE(head->dispatch(make_work("benchmarker", "b")));
  auto third = head->dispatch(make_work("benchmarker", "c"));
  EXPECT_FALSE(third);
  EXPECT_TRUE(raw.recv_as<work_item>(1s));
  EXPECT_TRUE(raw.recv_as<work_item>(1s));
  EXPECT_FALSE(raw.recv(300ms)) << "a third work item arrived";
  EXPECT_EQ(head->peers()[0].in_flight.size(), 2u);
  // Another role, a non-positive count and a duplicate request id are refused too.
  EXPECT_FALSE(head->send_work("p1", make_work("compiler", "d")));
  raw.send(work_credit{"compiler", 1});
  auto err = raw.recv_as<wire_error>(1s);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, "bad_credit");
  raw.send(work_credit{"benchmarker", 1});
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  auto in_flight = head->peers()[0].in_flight;
  auto dup = head->send_work("p1", make_work("benchmarker", "e", in_flight[0]));
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.message().find("already in flight"), std::string::npos);
}

TEST(WireHead, AnUnregisteredConnectionNeverReceivesWork) {
  auto head = start_head(fast_head_options());
  raw_peer stranger(head->endpoint());
  // It claims credit and heartbeats without registering: each is answered with not_registered.
  stranger.send(work_credit{"benchmarker", 5});
  auto err = stranger.recv_as<wire_error>(2s);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, "not_registered");
  stranger.send(heartbeat{1, 0.0});
  EXPECT_TRUE(stranger.recv_as<wire_error>(2s));
  EXPECT_EQ(head->counters().unregistered, 2u);
  EXPECT_FALSE(head->dispatch(make_work("benchmarker", "x")));
  EXPECT_FALSE(head->send_work("stranger", make_work("benchmarker", "x")));

  raw_peer member(head->endpoint());
  member.join("member", {{"benchmarker", 3, 0}});
  member.send(work_credit{"benchmarker", 3});
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  for (int i = 0; i < 3; ++i) {
    auto d = head->dispatch(make_work("benchmarker", "x"));
    ASSERT_TRUE(d) << d.message();
    EXPECT_EQ(d->peer_id, "member");
  }
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(member.recv_as<work_item>(1s));
  EXPECT_FALSE(stranger.recv(300ms)) << "the unregistered connection received a frame";
}

TEST(WireHead, ASilentPeerIsDeclaredDeadWithItsInFlightIds) {
  auto opt = fast_head_options();
  opt.liveness = 3;
  auto head = start_head(opt);
  raw_peer raw(head->endpoint());
  raw.join("quiet", {{"benchmarker", 2, 0}});
  raw.send(work_credit{"benchmarker", 2});
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  auto a = head->send_work("quiet", make_work("benchmarker", "a", 101));
  auto b = head->send_work("quiet", make_work("benchmarker", "b", 102));
  ASSERT_TRUE(a && b);
  auto start = std::chrono::steady_clock::now();
  // It never heartbeats: after liveness (3) x 100 ms of silence the head gives up on it.
  auto left = wait_event<peer_left>(*head, 3s);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(left);
  EXPECT_EQ(left->peer_id, "quiet");
  EXPECT_EQ(left->reason, "heartbeat_timeout");
  EXPECT_EQ(left->in_flight, (std::vector<uint64_t>{101, 102}));
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_TRUE(head->peers().empty());
  // Its late answer is not accepted: it is no longer registered.
  work_result late;
  late.request_id = 101;
  raw.send(late);
  bool told = false;
  while (auto env = raw.recv(1s)) {
    if (env->kind != "error") continue;
    told = env->as<wire_error>()->code == "not_registered";
    break;
  }
  EXPECT_TRUE(told);
  EXPECT_FALSE(wait_event<work_done>(*head, 100ms));
}

TEST(WireHead, HeartbeatsKeepAPeerAlive) {
  auto head = start_head(fast_head_options());
  raw_peer raw(head->endpoint());
  raw.join("alive", {{"compiler", 1, -1}});
  for (int i = 0; i < 15; ++i) {  // 1.5 s, three times the liveness window
    raw.send(heartbeat{uint64_t(i), 0.0});
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(head->peers().size(), 1u);
  EXPECT_FALSE(wait_event<peer_left>(*head, 10ms));
}

TEST(WireHead, MalformedFramesAndOtherVersionsAreCountedAndAnswered) {
  auto head = start_head(fast_head_options());
  raw_peer raw(head->endpoint());
  auto expect_error = [&](const std::string& code) {
    auto err = raw.recv_as<wire_error>(2s);
    ASSERT_TRUE(err) << "no error frame for " << code;
    EXPECT_EQ(err->code, code) << err->message;
    EXPECT_FALSE(err->message.empty());
  };
  raw.send_bytes("this is not msgpack");
  expect_error("malformed");
  raw.send_bytes(std::string());
  expect_error("malformed");
  std::string good = encode(heartbeat{});
  raw.send_bytes(good.substr(0, good.size() - 3));
  expect_error("malformed");
  // Two envelopes in one message.
  raw.socket().send(zmq::buffer(good), zmq::send_flags::sndmore);
  raw.socket().send(zmq::buffer(good), zmq::send_flags::none);
  expect_error("malformed");
  // A ready whose body does not fit.
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string("v"));
  pk.pack(schema_version);
  pk.pack(std::string("kind"));
  pk.pack(std::string("ready"));
  pk.pack(std::string("body"));
  pk.pack_map(1);
  pk.pack(std::string("roles"));
  pk.pack(std::string("not a list"));
  raw.send_bytes(std::string(buf.data(), buf.size()));
  expect_error("malformed");
  // A peer of a future schema version.
  buf.clear();
  pk.pack_map(3);
  pk.pack(std::string("v"));
  pk.pack(schema_version + 1);
  pk.pack(std::string("kind"));
  pk.pack(std::string("ready"));
  pk.pack(std::string("body"));
  pk.pack(peer_ready{});
  raw.send_bytes(std::string(buf.data(), buf.size()));
  expect_error("version");
  // A message kind a head does not take.
  raw.send(candidate{});
  expect_error("unexpected_kind");

  auto c = head->counters();
  EXPECT_EQ(c.malformed, 5u);
  EXPECT_EQ(c.wrong_version, 1u);
  EXPECT_EQ(c.unexpected_kind, 1u);
  // None of it was fatal: the same connection registers and works.
  raw.join("survivor", {{"compiler", 1, -1}});
  EXPECT_TRUE(wait_event<peer_joined>(*head, 2s));
}

TEST(WireHead, ControlRequestsAreAnsweredToTheirClient) {
  auto head = start_head(fast_head_options());
  // A one-shot REQ client, as `crucible status` may be.
  raw_peer client(head->endpoint(), zmq::socket_type::req);
  client.send(control{"status", "", 0, {}});
  auto req = wait_event<control_request>(*head, 2s);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->command.command, "status");
  EXPECT_TRUE(req->peer_id.empty());
  EXPECT_EQ(req->address, "127.0.0.1");  // from the connection, for the control policy
  EXPECT_EQ(req->public_key, "");        // no CURVE
  status_report report;
  report.step = 42;
  ASSERT_TRUE(head->reply(req->client, encode(report, "head")));
  auto got = client.recv_as<status_report>(2s);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->step, 42);
  // One answer per request; unknown tokens are refused.
  EXPECT_FALSE(head->reply(req->client, encode(report)));
  EXPECT_FALSE(head->reply("zz", encode(report)));
  EXPECT_FALSE(head->reply("00112233", encode(report)));
}

TEST(WireHead, DrainRequestStopsNewWorkAndEndsWithADisconnect) {
  auto head = start_head(fast_head_options());
  raw_peer raw(head->endpoint());
  raw.join("p1", {{"benchmarker", 2, 0}});
  raw.send(work_credit{"benchmarker", 2});
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  auto id = head->send_work("p1", make_work("benchmarker", "a"));
  ASSERT_TRUE(id);
  ASSERT_TRUE(raw.recv_as<work_item>(1s));
  ASSERT_TRUE(head->request_drain("p1", "scale down"));
  auto d = raw.recv_as<peer_disconnect>(1s);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->drain);
  EXPECT_EQ(d->reason, "scale down");
  EXPECT_FALSE(head->send_work("p1", make_work("benchmarker", "b")));  // it still had a credit
  // A credit that crossed the drain request on the wire is dropped quietly: no error, no new work.
  raw.send(work_credit{"benchmarker", 1});
  EXPECT_FALSE(raw.recv(200ms));
  EXPECT_FALSE(head->dispatch(make_work("benchmarker", "b")));
  EXPECT_EQ(head->counters().malformed, 0u);
  raw.send(peer_disconnect{"draining", true});
  ASSERT_TRUE(wait_event<peer_draining>(*head, 2s));
  work_result r;
  r.request_id = *id;
  raw.send(r);
  ASSERT_TRUE(wait_event<work_done>(*head, 2s));
  raw.send(peer_disconnect{"drained", false});
  auto left = wait_event<peer_left>(*head, 2s);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->reason, "disconnected");
  EXPECT_TRUE(left->in_flight.empty());
}

TEST(WireHead, TheSamePeerIdFromANewConnectionReplacesTheOldSession) {
  auto head = start_head(fast_head_options());
  raw_peer first(head->endpoint());
  first.join("p1", {{"compiler", 1, -1}});
  first.send(work_credit{"compiler", 1});
  ASSERT_TRUE(wait_event<credit_granted>(*head, 2s));
  ASSERT_TRUE(head->send_work("p1", make_work("compiler", "a", 7)));
  raw_peer second(head->endpoint());
  second.join("p1", {{"compiler", 1, -1}});
  auto left = wait_event<peer_left>(*head, 2s);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->reason, "replaced");
  EXPECT_EQ(left->in_flight, std::vector<uint64_t>{7});
  ASSERT_EQ(head->peers().size(), 1u);
  EXPECT_TRUE(head->peers()[0].credits.empty());  // credit belongs to a session
}

TEST(WireHead, EventsGoToTheCallbackWhenOneIsSet) {
  auto opt = fast_head_options();
  std::mutex mu;
  std::vector<std::string> joined;
  opt.on_event = [&](wire_event ev) {
    if (auto* j = std::get_if<peer_joined>(&ev)) {
      std::lock_guard<std::mutex> lock(mu);
      joined.push_back(j->peer_id);
    }
  };
  auto head = start_head(opt);
  raw_peer raw(head->endpoint());
  raw.join("cb", {});
  EXPECT_TRUE(eventually(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return joined == std::vector<std::string>{"cb"};
      },
      2s));
  EXPECT_FALSE(head->next_event(20ms));
}

}  // namespace
}  // namespace crucible::runtime
