#include "messages/envelope.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>

#include <gtest/gtest.h>

#include "tests/messages/sample_messages.hpp"

namespace crucible {
namespace {

template <class T>
void expect_round_trip(const T& msg) {
  std::string bytes = encode(msg, "test");
  auto env = decode(bytes);
  ASSERT_TRUE(env) << env.message();
  EXPECT_EQ(env->kind, message_kind<T>::name);
  EXPECT_EQ(env->from, "test");
  EXPECT_EQ(env->version, schema_version);
  auto back = env->template as<T>();
  ASSERT_TRUE(back) << back.message();
  // Every field is in the map, so equal re-encodings mean equal messages.
  EXPECT_EQ(encode(*back, "test"), bytes);
}

TEST(Envelope, EveryMessageTypeRoundTrips) {
  expect_round_trip(test::sample_task());
  expect_round_trip(test::sample_prompt());
  expect_round_trip(test::sample_candidate());
  expect_round_trip(test::sample_compile());
  expect_round_trip(test::sample_bench());
  expect_round_trip(test::sample_eval_request());
  expect_round_trip(test::sample_verdict());
  expect_round_trip(test::sample_group().members[0]);
  expect_round_trip(test::sample_group());
  expect_round_trip(test::sample_batch());
  expect_round_trip(test::sample_weights());
  expect_round_trip(test::sample_control());
  expect_round_trip(test::sample_status());
  expect_round_trip(test::sample_ready());
  expect_round_trip(test::sample_registered());
  expect_round_trip(test::sample_heartbeat());
  expect_round_trip(test::sample_work());
  expect_round_trip(test::sample_work_result());
  expect_round_trip(test::sample_credit());
  expect_round_trip(test::sample_disconnect());
  expect_round_trip(test::sample_wire_error());
}

TEST(Envelope, FieldsSurviveTheTrip) {
  auto c = decode_as<candidate>(encode(test::sample_candidate()));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, "g7-3");
  EXPECT_EQ(c->policy_version, 12);
  ASSERT_EQ(c->logprobs.size(), 3u);
  EXPECT_FLOAT_EQ(c->logprobs[2], -1.25f);
  auto v = decode_as<verdict>(encode(test::sample_verdict()));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->review.finding, "hack");
  EXPECT_EQ(v->review.reasons, (std::vector<std::string>{"speedup", "static_features"}));
  EXPECT_DOUBLE_EQ(v->review.similarity, 0.96);
  auto w = decode_as<weights_update>(encode(test::sample_weights()));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->bytes, test::sample_weights().bytes);
  auto t = decode_as<task_spec>(encode(test::sample_task()));
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->ops[3].attrs.at("s"), 0.5);
}

TEST(Envelope, EveryTruncationIsAnErrorNotACrash) {
  std::string bytes = encode(test::sample_group());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto env = decode(std::string_view(bytes.data(), n));
    if (env) {
      // A prefix can only decode if it is a complete envelope, which a strict prefix never is.
      ADD_FAILURE() << "prefix of " << n << " bytes decoded";
    }
  }
}

TEST(Envelope, RandomBytesAndBitFlipsGiveErrorsOrValidMessages) {
  std::mt19937 rng(7);
  std::string good = encode(test::sample_bench());
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    auto b = decode_as<bench_result>(bytes);  // must not crash or throw
    if (!b) EXPECT_FALSE(b.message().empty());
  }
  for (int i = 0; i < 1000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    auto env = decode(junk);
    if (!env) EXPECT_FALSE(env.message().empty());
  }
}

// A candidate envelope whose 'v' is `version`, as another build (or a forger) would write it.
std::string frame_with_version(uint64_t version) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string("v"));
  pk.pack(version);
  pk.pack(std::string("kind"));
  pk.pack(std::string("candidate"));
  pk.pack(std::string("body"));
  pk.pack(test::sample_candidate());
  return std::string(buf.data(), buf.size());
}

TEST(Envelope, WrongVersionIsAClearError) {
  // The next version, and one past 32 bits that must not wrap onto this build's.
  for (uint64_t v : {uint64_t{schema_version} + 1, (uint64_t{1} << 32) + schema_version}) {
    auto env = decode(frame_with_version(v));
    ASSERT_FALSE(env) << v;
    EXPECT_NE(env.message().find("schema version " + std::to_string(v)), std::string::npos) << env.message();
  }
}

TEST(Envelope, MissingVersionKindOrBodyAreErrors) {
  auto make = [](bool v, bool kind, bool body) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pk.pack_map(int(v) + int(kind) + int(body));
    if (v) pk.pack(std::string("v")), pk.pack(schema_version);
    if (kind) pk.pack(std::string("kind")), pk.pack(std::string("control"));
    if (body) pk.pack(std::string("body")), pk.pack(test::sample_control());
    return std::string(buf.data(), buf.size());
  };
  EXPECT_FALSE(decode(make(false, true, true)));
  EXPECT_FALSE(decode(make(true, false, true)));
  EXPECT_FALSE(decode(make(true, true, false)));
  EXPECT_TRUE(decode(make(true, true, true)));
  EXPECT_FALSE(decode(encode(test::sample_control()) + "x"));  // trailing bytes
}

TEST(Envelope, KindMismatchIsAnError) {
  auto r = decode_as<candidate>(encode(test::sample_control()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("expected 'candidate'"), std::string::npos);
}

// An envelope packed by hand around any body: what a peer with another idea of the fields sends.
template <class Body>
std::string envelope_of(const std::string& kind, const Body& body) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string("v"));
  pk.pack(schema_version);
  pk.pack(std::string("kind"));
  pk.pack(kind);
  pk.pack(std::string("body"));
  pk.pack(body);
  return std::string(buf.data(), buf.size());
}

struct control_from_the_future {
  std::string command = "stop";
  std::vector<int> a_field_from_the_future = {1, 2, 3};
  MSGPACK_DEFINE_MAP(command, a_field_from_the_future);
};

TEST(Envelope, UnknownKeysAreIgnoredAndMissingKeysDefault) {
  auto c = decode_as<control>(envelope_of("control", control_from_the_future{}));
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->command, "stop");
  EXPECT_EQ(c->role, "");
  EXPECT_EQ(c->count, 0);
}

// The verdict as it was before the judge stage: no `review`.
struct verdict_before_review {
  std::string candidate_id = "g7-3";
  std::string content_hash = "0123";
  std::string outcome = "pass";
  std::vector<std::string> flags;
  std::vector<std::string> evidence = {"checks: 4 of 6"};
  double speedup = 2.5;
  double reward = 2.5;
  MSGPACK_DEFINE_MAP(candidate_id, content_hash, outcome, flags, evidence, speedup, reward);
};

// A verdict from a peer or a replay database older than the judge stage decodes, not reviewed.
TEST(Envelope, AVerdictWithoutAReviewStillDecodes) {
  auto v = decode_as<verdict>(envelope_of("verdict", verdict_before_review{}));
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->outcome, "pass");
  EXPECT_DOUBLE_EQ(v->reward, 2.5);
  EXPECT_TRUE(v->review.finding.empty());
  EXPECT_TRUE(v->review.reasoning.empty());
  EXPECT_DOUBLE_EQ(v->review.similarity, 0.0);
}

struct control_with_a_text_count {
  std::string count = "three";
  MSGPACK_DEFINE_MAP(count);
};

TEST(Envelope, WrongFieldTypeIsAnError) {
  auto c = decode_as<control>(envelope_of("control", control_with_a_text_count{}));
  ASSERT_FALSE(c);
  EXPECT_NE(c.message().find("malformed 'control' body"), std::string::npos) << c.message();
}

// Golden bytes pin the wire format: a change here breaks every peer written in another language.
// Regenerate deliberately with CRUCIBLE_UPDATE_GOLDEN=1 (and bump schema_version if meanings changed).
template <class T>
void expect_golden(const T& msg) {
  std::string path = std::string(CRUCIBLE_TEST_DATA_DIR) + "/messages/" + message_kind<T>::name + ".msgpack";
  std::string bytes = encode(msg, "golden");
  if (std::getenv("CRUCIBLE_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << bytes;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with CRUCIBLE_UPDATE_GOLDEN=1 once)";
  std::string want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, want) << "wire bytes of '" << message_kind<T>::name << "' changed";
  auto back = decode_as<T>(want);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(encode(*back, "golden"), want);
}

TEST(Envelope, GoldenBytes) {
  expect_golden(test::sample_task());
  expect_golden(test::sample_prompt());
  expect_golden(test::sample_candidate());
  expect_golden(test::sample_compile());
  expect_golden(test::sample_bench());
  expect_golden(test::sample_eval_request());
  expect_golden(test::sample_verdict());
  expect_golden(test::sample_group().members[0]);
  expect_golden(test::sample_group());
  expect_golden(test::sample_batch());
  expect_golden(test::sample_weights());
  expect_golden(test::sample_control());
  expect_golden(test::sample_status());
  expect_golden(test::sample_ready());
  expect_golden(test::sample_registered());
  expect_golden(test::sample_heartbeat());
  expect_golden(test::sample_work());
  expect_golden(test::sample_work_result());
  expect_golden(test::sample_credit());
  expect_golden(test::sample_disconnect());
  expect_golden(test::sample_wire_error());
}

}  // namespace
}  // namespace crucible
