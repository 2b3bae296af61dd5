#include "runtime/storage/tensorboard_log.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

struct temp_dir {
  std::string path;
  explicit temp_dir(const std::string& name)
      : path((fs::temp_directory_path() / ("crucible-tb-" + name + "-" + std::to_string(::getpid())))
                 .string()) {
    fs::remove_all(path);
  }
  ~temp_dir() { fs::remove_all(path); }
};

step_metrics step(int64_t n, double reward) {
  step_metrics m;
  m.step = n;
  m.policy_version = n;
  m.reward_mean = reward;
  m.correct_rate = 0.5;
  m.speedup_best = {{"softmax", 1.25}, {"layer_norm", 0.75}};
  return m;
}

float scalar(const tensorboard_event& e, const std::string& tag) {
  for (const auto& [t, v] : e.scalars)
    if (t == tag) return v;
  ADD_FAILURE() << "no scalar " << tag;
  return -1;
}

TEST(TensorboardLog, StepsReadBackWithTheirScalarsAndTheFileVersionFirst) {
  temp_dir dir("steps");
  auto log = tensorboard_log::open(dir.path + "/tb");
  ASSERT_TRUE(log) << log.message();
  EXPECT_NE(fs::path(log->path()).filename().string().find("events.out.tfevents."), std::string::npos)
      << "TensorBoard only reads files named events.out.tfevents.*";
  ASSERT_TRUE(log->append(step(1, 0.25)));
  ASSERT_TRUE(log->append(step(2, -0.5)));
  auto events = read_tensorboard_events(log->path());
  ASSERT_TRUE(events) << events.message();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].file_version, "brain.Event:2");
  EXPECT_GT((*events)[0].wall_time, 1.7e9);
  EXPECT_EQ((*events)[1].step, 1);
  EXPECT_EQ((*events)[2].step, 2);
  EXPECT_FLOAT_EQ(scalar((*events)[1], "reward_mean"), 0.25f);
  EXPECT_FLOAT_EQ(scalar((*events)[2], "reward_mean"), -0.5f);
  EXPECT_FLOAT_EQ(scalar((*events)[2], "correct_rate"), 0.5f);
  EXPECT_FLOAT_EQ(scalar((*events)[2], "policy_version"), 2.0f);
  EXPECT_FLOAT_EQ(scalar((*events)[2], "speedup_best/softmax"), 1.25f);
  EXPECT_FLOAT_EQ(scalar((*events)[2], "speedup_best/layer_norm"), 0.75f);
  EXPECT_EQ((*events)[1].session_status, 0);
}

TEST(TensorboardLog, AResumedRunOpensItsOwnFileWithAStartAtTheNextStep) {
  temp_dir dir("resume");
  auto first = tensorboard_log::open(dir.path);
  ASSERT_TRUE(first);
  auto second = tensorboard_log::open(dir.path, 7);
  ASSERT_TRUE(second);
  EXPECT_NE(first->path(), second->path()) << "two writers in one directory never share a file";
  ASSERT_TRUE(second->append(step(8, 1.0)));
  auto events = read_tensorboard_events(second->path());
  ASSERT_TRUE(events) << events.message();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[1].session_status, 1);
  EXPECT_EQ((*events)[1].step, 8);
  EXPECT_EQ((*events)[2].step, 8);
}

// The framing is what TensorBoard checks: a flipped bit in a length or a body, or a torn tail, is refused.
TEST(TensorboardLog, TheReaderRefusesACorruptOrTornRecord) {
  temp_dir dir("corrupt");
  auto log = tensorboard_log::open(dir.path);
  ASSERT_TRUE(log);
  ASSERT_TRUE(log->append(step(1, 0.25)));
  std::string bytes;
  {
    std::ifstream in(log->path(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto rewrite = [&](const std::string& b) {
    std::ofstream(log->path(), std::ios::binary | std::ios::trunc) << b;
    return read_tensorboard_events(log->path());
  };
  uint64_t first_length = 0;
  std::memcpy(&first_length, bytes.data(), 8);
  const size_t second = 12 + first_length + 4;

  std::string body_flip = bytes;
  body_flip[second + 12 + 3] ^= 0x01;
  auto r = rewrite(body_flip);
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("data CRC"), std::string::npos) << r.message();

  std::string length_flip = bytes;
  length_flip[second] ^= 0x01;
  r = rewrite(length_flip);
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("length CRC"), std::string::npos) << r.message();

  r = rewrite(bytes.substr(0, bytes.size() - 2));
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("torn"), std::string::npos) << r.message();

  r = rewrite(bytes);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->size(), 2u);
}

TEST(TensorboardLog, AnUnwritableDirectoryIsAnError) {
  temp_dir dir("unwritable");
  std::ofstream(dir.path) << "a file, not a directory";
  auto log = tensorboard_log::open(dir.path + "/tb");
  ASSERT_FALSE(log);
  EXPECT_NE(log.message().find("cannot create"), std::string::npos) << log.message();
  fs::remove(dir.path);
}

}  // namespace
}  // namespace crucible::runtime
