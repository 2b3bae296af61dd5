#include <gtest/gtest.h>

#include "kernels/program/program.hpp"

namespace crucible::kernels {
namespace {

TEST(ProgramText, RoundTripsTheDocumentedExample) {
  const std::string text = "rewrites: a,b | [0-2] simd math=poly unroll=4 | [3] online acc=8";
  auto p = parse_program(text);
  ASSERT_TRUE(p) << p.message();
  EXPECT_EQ(p->rewrites, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(p->groups.size(), 2u);
  EXPECT_EQ(p->groups[0].first, 0);
  EXPECT_EQ(p->groups[0].last, 2);
  EXPECT_EQ(p->groups[0].strategy, "simd");
  EXPECT_EQ(p->groups[0].knobs.at("unroll"), "4");
  EXPECT_EQ(p->groups[1].first, 3);
  EXPECT_EQ(p->groups[1].last, 3);
  EXPECT_EQ(to_text(*p), text);
}

TEST(ProgramText, NoRewritesAndNoKnobs) {
  program p;
  p.groups.push_back(group_plan{0, 0, "naive", {}});
  p.groups.push_back(group_plan{1, 4, "loop", {{"unroll", "1"}, {"math", "libm"}}});
  const std::string text = to_text(p);
  EXPECT_EQ(text, "rewrites: - | [0] naive | [1-4] loop math=libm unroll=1");
  auto back = parse_program(text);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(*back, p);
}

TEST(ProgramText, ToleratesExtraSpaces) {
  auto p = parse_program("rewrites:   fold_scalars  |  [0-1]   simd   unroll=2  ");
  ASSERT_TRUE(p) << p.message();
  EXPECT_EQ(to_text(*p), "rewrites: fold_scalars | [0-1] simd unroll=2");
}

TEST(ProgramText, ErrorsSayWhatDidNotParse) {
  for (const char* bad :
       {"", "rewrite: -", "rewrites: - | 0 loop", "rewrites: - | [2-1] loop", "rewrites: - | [0]",
        "rewrites: - | [0] loop unroll", "rewrites: - | [0] loop a=1 a=2", "rewrites: a b | [0] x",
        "rewrites: - | [x] loop", "rewrites: - | [0-0] loop"}) {
    auto p = parse_program(bad);
    EXPECT_FALSE(p) << bad;
    if (!p) EXPECT_FALSE(p.message().empty());
  }
}

}  // namespace
}  // namespace crucible::kernels
