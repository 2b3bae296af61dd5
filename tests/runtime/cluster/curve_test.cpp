// CURVE: key files, and a head that admits only the peers whose public key it lists.
#include "runtime/cluster/curve_keys.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/cluster/wire_peer.hpp"
#include "tests/runtime/cluster/wire_test_support.hpp"

namespace crucible::runtime {
namespace {

using namespace test;
namespace fs = std::filesystem;

class CurveKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!curve_available()) GTEST_SKIP() << "this libzmq has no CURVE support";
    dir_ = fs::temp_directory_path() / ("crucible_curve_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  curve_keypair make_pair(const std::string& name) {
    auto pair = generate_curve_keypair();
    EXPECT_TRUE(pair) << pair.message();
    EXPECT_TRUE(write_curve_keypair(*pair, path(name + ".key"), path(name + ".pub")));
    return *pair;
  }

  fs::path dir_;
};

TEST_F(CurveKeys, GeneratedPairsAreZ85AndSurviveTheirFiles) {
  auto pair = make_pair("head");
  EXPECT_TRUE(is_z85_key(pair.public_key));
  EXPECT_TRUE(is_z85_key(pair.secret_key));
  EXPECT_NE(pair.public_key, pair.secret_key);
  auto back = read_curve_secret(path("head.key"));
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->public_key, pair.public_key);
  EXPECT_EQ(back->secret_key, pair.secret_key);
  auto pub = read_curve_public(path("head.pub"));
  ASSERT_TRUE(pub) << pub.message();
  EXPECT_EQ(*pub, pair.public_key);
  EXPECT_EQ(*read_curve_public(path("head.key")), pair.public_key);  // a secret file has the public key too
  struct stat st {};
  ASSERT_EQ(::stat(path("head.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the secret key file must be private";
}

// `crucible keygen --secret keys/cluster.key` in a fresh clone: the folder is made, private to its owner.
TEST_F(CurveKeys, FoldersThePathsNameAreMade) {
  auto pair = *generate_curve_keypair();
  ASSERT_TRUE(write_curve_keypair(pair, path("keys/cluster.key"), path("pub/cluster.pub")));
  EXPECT_EQ(*read_curve_public(path("pub/cluster.pub")), pair.public_key);
  EXPECT_EQ(read_curve_secret(path("keys/cluster.key"))->secret_key, pair.secret_key);
  struct stat st {};
  ASSERT_EQ(::stat(path("keys").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// The same path twice, or a public key aimed at an existing secret: refused before anything is written.
TEST_F(CurveKeys, APublicKeyNeverOverwritesASecret) {
  auto pair = *generate_curve_keypair();
  auto same = write_curve_keypair(pair, path("k.key"), path("k.key"));
  ASSERT_FALSE(same);
  EXPECT_NE(same.message().find("is the secret key file"), std::string::npos) << same.message();
  EXPECT_FALSE(std::filesystem::exists(path("k.key")));
  auto first = make_pair("first");
  auto onto = write_curve_keypair(pair, path("second.key"), path("first.key"));
  ASSERT_FALSE(onto);
  EXPECT_NE(onto.message().find("holds a secret key"), std::string::npos) << onto.message();
  EXPECT_EQ(read_curve_secret(path("first.key"))->secret_key, first.secret_key)
      << "the first secret survives";
}

TEST_F(CurveKeys, MistakesAreClearErrors) {
  auto pair = make_pair("a");
  // Never overwrite a secret someone may already use.
  auto again = write_curve_keypair(pair, path("a.key"), "");
  ASSERT_FALSE(again);
  EXPECT_NE(again.message().find("cannot create secret key file"), std::string::npos) << again.message();
  auto missing = read_curve_secret(path("nope.key"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("nope.key"), std::string::npos);
  auto pub_only = read_curve_secret(path("a.pub"));
  ASSERT_FALSE(pub_only);
  EXPECT_NE(pub_only.message().find("no secret-key"), std::string::npos) << pub_only.message();
  auto other = *generate_curve_keypair();
  std::ofstream(path("mixed.key")) << "public-key = \"" << pair.public_key << "\"\nsecret-key = \""
                                   << other.secret_key << "\"\n";
  auto mixed = read_curve_secret(path("mixed.key"));
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.message().find("do not belong together"), std::string::npos) << mixed.message();
  std::ofstream(path("short.pub")) << "public-key = \"abc\"\n";
  auto bad = read_curve_public(path("short.pub"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("40-character Z85"), std::string::npos) << bad.message();
  EXPECT_FALSE(is_z85_key("short"));
  EXPECT_FALSE(is_z85_key(std::string(40, '"')));
}

TEST_F(CurveKeys, AllowedKeysFromAFileOrADirectory) {
  auto a = make_pair("a");
  auto b = make_pair("b");
  std::ofstream(path("allowed.txt")) << "# peers that may join\n"
                                     << a.public_key << "\n\npublic-key = \"" << b.public_key
                                     << "\"  # node 2\n";
  auto from_file = read_allowed_keys(path("allowed.txt"));
  ASSERT_TRUE(from_file) << from_file.message();
  EXPECT_EQ(*from_file, (std::vector<std::string>{a.public_key, b.public_key}));
  fs::create_directories(dir_ / "peers");
  fs::copy_file(path("a.pub"), dir_ / "peers" / "a.pub");
  fs::copy_file(path("b.pub"), dir_ / "peers" / "b.pub");
  auto from_dir = read_allowed_keys(path("peers"));
  ASSERT_TRUE(from_dir) << from_dir.message();
  EXPECT_EQ(from_dir->size(), 2u);
  std::ofstream(path("broken.txt")) << a.public_key << "\nnot-a-key\n";
  auto broken = read_allowed_keys(path("broken.txt"));
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.message().find("line 2"), std::string::npos) << broken.message();
  std::ofstream(path("empty.txt")) << "# nobody\n";
  EXPECT_FALSE(read_allowed_keys(path("empty.txt")));
  auto server = load_curve_server(path("a.key"), path("allowed.txt"));
  ASSERT_TRUE(server) << server.message();
  EXPECT_EQ(server->allowed_clients.size(), 2u);
  auto client = load_curve_client(path("b.key"), path("a.pub"));
  ASSERT_TRUE(client) << client.message();
  EXPECT_EQ(client->server_public, a.public_key);
}

class CurveHead : public CurveKeys {
 protected:
  void SetUp() override {
    CurveKeys::SetUp();
    if (IsSkipped()) return;
    server_ = *generate_curve_keypair();
    allowed_ = *generate_curve_keypair();
    stranger_ = *generate_curve_keypair();
    auto opt = fast_head_options();
    opt.curve = curve_server_keys{server_, {allowed_.public_key}};
    head_ = start_head(opt);
    ASSERT_TRUE(head_);
    EXPECT_EQ(head_->public_key(), server_.public_key);
  }

  std::unique_ptr<wire_peer> peer_with(std::optional<curve_client_keys> keys) {
    wire_peer_options opt;
    opt.endpoint = head_->endpoint();
    opt.roles = {{"compiler", 1, -1}};
    opt.handler = [](const work_item& w, work_reply reply) {
      reply(work_result{w.request_id, "ok", w.payload, "", 0});
    };
    opt.heartbeat_interval = 100ms;
    opt.register_timeout = 300ms;
    opt.reconnect_min = 50ms;
    opt.reconnect_max = 200ms;
    opt.curve = std::move(keys);
    auto p = wire_peer::start(std::move(opt));
    EXPECT_TRUE(p) << p.message();
    return p ? std::move(*p) : nullptr;
  }

  curve_keypair server_, allowed_, stranger_;
  std::unique_ptr<wire_head> head_;
};

TEST_F(CurveHead, APeerWithAnAllowedKeyJoinsAndWorks) {
  auto peer = peer_with(curve_client_keys{allowed_, server_.public_key});
  ASSERT_TRUE(peer->wait_for(peer_state::registered, 3s)) << peer->last_error();
  auto joined = wait_event<peer_joined>(*head_, 2s);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->public_key, allowed_.public_key);  // the head knows which key it authenticated
  ASSERT_TRUE(wait_event<credit_granted>(*head_, 2s));
  ASSERT_TRUE(head_->dispatch(make_work("compiler", "secret work")));
  auto done = wait_event<work_done>(*head_, 2s);
  ASSERT_TRUE(done);
  EXPECT_EQ(decode_embedded<control>(done->result.payload.at(0))->command, "secret work");
  EXPECT_EQ(head_->counters().auth_denied, 0u);
}

TEST_F(CurveHead, APeerWithAnotherKeyIsRefusedAndNeverHeard) {
  auto peer = peer_with(curve_client_keys{stranger_, server_.public_key});
  EXPECT_FALSE(peer->wait_for(peer_state::registered, 1500ms));
  EXPECT_TRUE(head_->peers().empty());
  EXPECT_FALSE(head_->next_event(10ms));
  auto c = head_->counters();
  EXPECT_EQ(c.frames_in, 0u) << "a frame from an unauthenticated peer reached the head";
  EXPECT_GE(c.auth_denied, 1u);
  EXPECT_GE(peer->counters().connect_attempts, 2u);  // it keeps trying, with backoff, and never gets in
}

TEST_F(CurveHead, APeerThatHasTheWrongServerKeyIsRefused) {
  auto peer = peer_with(curve_client_keys{allowed_, stranger_.public_key});
  EXPECT_FALSE(peer->wait_for(peer_state::registered, 1500ms));
  EXPECT_TRUE(head_->peers().empty());
  EXPECT_EQ(head_->counters().frames_in, 0u);
}

TEST_F(CurveHead, APeerWithoutKeysIsRefusedAndCannotSendAnything) {
  auto peer = peer_with(std::nullopt);
  raw_peer raw(head_->endpoint());  // plain ZeroMQ trying a control command, credit and a registration
  raw.send(control{"stop", "", 0, {}});
  raw.send(work_credit{"compiler", 1});
  peer_ready r;
  r.peer_id = "intruder";
  raw.send(r);
  EXPECT_FALSE(raw.recv(1s)) << "the head answered an unauthenticated connection";
  EXPECT_FALSE(peer->wait_for(peer_state::registered, 200ms));
  EXPECT_TRUE(head_->peers().empty());
  EXPECT_FALSE(head_->next_event(10ms)) << "a control request or join got through";
  auto c = head_->counters();
  EXPECT_EQ(c.frames_in, 0u);
  EXPECT_GE(c.handshake_failed, 1u);
}

}  // namespace
}  // namespace crucible::runtime
