#include "messages/cluster.hpp"

#include <set>

#include <gtest/gtest.h>

#include "messages/envelope.hpp"
#include "tests/messages/sample_messages.hpp"

namespace crucible {
namespace {

TEST(Cluster, EveryKindIsKnownOnce) {
  const auto& kinds = known_kinds();
  std::set<std::string> unique(kinds.begin(), kinds.end());
  EXPECT_EQ(unique.size(), kinds.size()) << "a wire name is used twice";
  for (const char* k :
       {"ready", "registered", "heartbeat", "work", "work_result", "credit", "disconnect", "error"})
    EXPECT_EQ(unique.count(k), 1u) << k;
}

TEST(Cluster, WorkPayloadIsAListOfCompleteEnvelopes) {
  auto w = decode_as<work_item>(encode(test::sample_work(), "head"));
  ASSERT_TRUE(w) << w.message();
  ASSERT_EQ(w->payload.size(), 2u);
  auto c = decode_embedded<candidate>(w->payload[0]);
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->id, "g7-3");
  auto cr = decode_embedded<compile_result>(w->payload[1]);
  ASSERT_TRUE(cr) << cr.message();
  EXPECT_EQ(cr->log, "error: expected ';'");
  EXPECT_FALSE(decode_embedded<candidate>(w->payload[1]));  // kinds are checked inside too
  EXPECT_EQ(w->attempt, 2);
  EXPECT_DOUBLE_EQ(w->timeout_s, 180.0);
}

TEST(Cluster, PayloadTravelsAsBinaryNotText) {
  // Peers in other languages must see bytes (msgpack bin), not a string they would try to read as UTF-8.
  std::string bytes = encode(test::sample_work_result());
  auto handle = msgpack::unpack(bytes.data(), bytes.size());
  const auto& root = handle.get();
  const msgpack::object* body = nullptr;
  for (uint32_t i = 0; i < root.via.map.size; ++i)
    if (root.via.map.ptr[i].key.as<std::string>() == "body") body = &root.via.map.ptr[i].val;
  ASSERT_NE(body, nullptr);
  const msgpack::object* payload = nullptr;
  for (uint32_t i = 0; i < body->via.map.size; ++i)
    if (body->via.map.ptr[i].key.as<std::string>() == "payload") payload = &body->via.map.ptr[i].val;
  ASSERT_NE(payload, nullptr);
  ASSERT_EQ(payload->type, msgpack::type::ARRAY);
  ASSERT_EQ(payload->via.array.size, 1u);
  EXPECT_EQ(payload->via.array.ptr[0].type, msgpack::type::BIN);
}

TEST(Cluster, MissingFieldsDefaultSoMinimalPeersWork) {
  // A minimal worker may send only what it knows: {"role": "x"} is a credit of one.
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string("v"));
  pk.pack(schema_version);
  pk.pack(std::string("kind"));
  pk.pack(std::string("credit"));
  pk.pack(std::string("body"));
  pk.pack_map(1);
  pk.pack(std::string("role"));
  pk.pack(std::string("py_verifier"));
  auto c = decode_as<work_credit>(std::string_view(buf.data(), buf.size()));
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->role, "py_verifier");
  EXPECT_EQ(c->count, 1);
  auto r = decode_as<peer_ready>(encode(peer_ready{}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->protocol, cluster_protocol_version);
}

TEST(Cluster, PeekSchemaVersionTellsAnotherVersionFromGarbage) {
  std::string good = encode(test::sample_heartbeat());
  EXPECT_EQ(peek_schema_version(good), schema_version);
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string("v"));
  pk.pack(schema_version + 7);
  pk.pack(std::string("kind"));
  pk.pack(std::string("heartbeat"));
  pk.pack(std::string("body"));
  pk.pack(test::sample_heartbeat());
  std::string future(buf.data(), buf.size());
  EXPECT_EQ(peek_schema_version(future), schema_version + 7);
  EXPECT_FALSE(decode(future));
  EXPECT_EQ(peek_schema_version(""), std::nullopt);
  EXPECT_EQ(peek_schema_version("\xc1garbage"), std::nullopt);
  EXPECT_EQ(peek_schema_version(good.substr(0, good.size() / 2)), std::nullopt);
  msgpack::sbuffer arr;
  msgpack::pack(arr, std::vector<int>{1, 2});
  EXPECT_EQ(peek_schema_version(std::string_view(arr.data(), arr.size())), std::nullopt);
}

}  // namespace
}  // namespace crucible
