#include "runtime/storage/crc32c.hpp"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace crucible::runtime {
namespace {

// The check values of RFC 3720 (iSCSI), appendix B.4, and the catalogue's "123456789".
TEST(Crc32c, MatchesThePublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  std::string zeros(32, '\0'), ones(32, '\xFF'), up(32, '\0');
  for (int i = 0; i < 32; ++i) up[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up.data(), up.size()), 0x46DD794Eu);
}

TEST(Crc32c, ContinuesAcrossPieces) {
  const char* s = "the quick brown fox";
  const size_t n = std::strlen(s);
  EXPECT_EQ(crc32c(s + 7, n - 7, crc32c(s, 7)), crc32c(s, n));
}

TEST(Crc32c, TheMaskRotatesAndOffsets) {
  const uint32_t crc = crc32c("123456789", 9);
  EXPECT_EQ(masked_crc32c("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xA282EAD8u);
}

}  // namespace
}  // namespace crucible::runtime
