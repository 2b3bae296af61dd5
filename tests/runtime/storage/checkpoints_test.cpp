#include "runtime/storage/checkpoints.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("crucible-ckpt-" + std::to_string(::getpid()));
  temp_dir() { fs::remove_all(path); }
  ~temp_dir() { fs::remove_all(path); }
};

TEST(Checkpoints, LatestRoundTripsAndOldOnesArePruned) {
  temp_dir dir;
  for (int step = 1; step <= 5; ++step) {
    checkpoint c{step, step + 100, 1.5 * step, std::vector<char>(static_cast<size_t>(step), 'x')};
    ASSERT_TRUE(save_checkpoint(dir.path.string(), c, 3));
  }
  auto latest = load_latest_checkpoint(dir.path.string());
  ASSERT_TRUE(latest) << latest.message();
  EXPECT_EQ(latest->step, 5);
  EXPECT_EQ(latest->policy_version, 105);
  EXPECT_EQ(latest->state.size(), 5u);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.path().extension() == ".ckpt";
  EXPECT_EQ(files, 3);
}

TEST(Checkpoints, MissingAndCorruptCheckpointsAreErrors) {
  temp_dir dir;
  fs::create_directories(dir.path);
  EXPECT_FALSE(load_latest_checkpoint(dir.path.string()));
  std::ofstream(dir.path / "LATEST") << "step_000001.ckpt\n";
  std::ofstream(dir.path / "step_000001.ckpt") << "not msgpack at all";
  auto c = load_latest_checkpoint(dir.path.string());
  ASSERT_FALSE(c);
  EXPECT_NE(c.message().find("corrupt"), std::string::npos) << c.message();
}

}  // namespace
}  // namespace crucible::runtime
