// The live line: its estimate (the units left or the budget left, whichever ends first), its text within the
// terminal's width, and what reaches the terminal or a log: redrawn in place with permanent lines above it,
// or in a log only changes of phase and a heartbeat.
#include "runtime/hosting/terminal_progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace crucible::runtime {
namespace {

// What was written to a FILE*, read back.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fseek(f, 0, SEEK_END);
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

progress_state training(double done, double elapsed) {
  progress_state s;
  s.phase = "training";
  s.unit = "step";
  s.done = done;
  s.total = 100;
  s.elapsed_s = elapsed;
  s.limit_s = 600;
  s.per_unit_s = 2;
  s.unit_at_s = elapsed;
  s.detail = "40 generated, 31 scored, 9 in flight";
  return s;
}

TEST(TerminalProgress, FormatsDurations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(65), "1m05s");
  EXPECT_EQ(format_duration(3600 + 4 * 60 + 30), "1h04m");
  EXPECT_EQ(format_duration(-3), "0s");
}

// A run stops at max_steps or at max_minutes: the estimate is whichever comes first.
TEST(TerminalProgress, TheEstimateIsTheEarlierOfStepsAndBudget) {
  auto s = training(40, 100);
  EXPECT_DOUBLE_EQ(remaining_s(s), 120);  // 60 steps at 2 s
  s.elapsed_s = 550;
  s.unit_at_s = 550;
  EXPECT_DOUBLE_EQ(remaining_s(s), 50);  // the budget ends first
  // It counts down between steps.
  s = training(40, 100);
  s.elapsed_s = 130;
  EXPECT_DOUBLE_EQ(remaining_s(s), 90);
  s.elapsed_s = 400;
  EXPECT_DOUBLE_EQ(remaining_s(s), 0);
  // Before the first step only the budget is known; with neither, nothing.
  s = training(0, 30);
  s.per_unit_s = 0;
  EXPECT_DOUBLE_EQ(remaining_s(s), 570);
  s.limit_s = 0;
  EXPECT_LT(remaining_s(s), 0);
}

TEST(TerminalProgress, TheBarIsTheFurtherOfStepsAndBudget) {
  EXPECT_DOUBLE_EQ(progress_fraction(training(25, 60)), 0.25);
  EXPECT_DOUBLE_EQ(progress_fraction(training(25, 300)), 0.5);
  progress_state none;
  none.phase = "starting actors";
  EXPECT_LT(progress_fraction(none), 0);
}

TEST(TerminalProgress, TheLineShowsPhaseBarStepsTimeEstimateAndActivity) {
  const std::string line = render_progress(training(50, 300), 200);
  EXPECT_EQ(line.rfind("| training [########........]  50%", 0), 0u) << line;
  EXPECT_NE(line.find("step 50/100"), std::string::npos) << line;
  EXPECT_NE(line.find("5m00s/10m00s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 1m40s"), std::string::npos) << line;
  EXPECT_NE(line.find("40 generated, 31 scored, 9 in flight"), std::string::npos) << line;
  // The spinner turns with the tick; a phase with no count shows no bar and no estimate.
  EXPECT_EQ(render_progress(training(50, 300), 200, 1)[0], '/');
  progress_state start;
  start.phase = "starting actors";
  start.elapsed_s = 1;
  EXPECT_EQ(render_progress(start, 200), "| starting actors · 1s");
}

TEST(TerminalProgress, TheLineFitsTheWidthWithoutSplittingACharacter) {
  for (int width = 10; width < 140; ++width) {
    const std::string line = render_progress(training(50, 300), width);
    ASSERT_LE(line.size(), static_cast<size_t>(width));
    // "·" is two bytes: a cut never leaves its first byte alone at the end.
    ASSERT_NE(static_cast<unsigned char>(line.back()), 0xC2) << width;
  }
}

// In a log: a line when the phase changes and a heartbeat while nothing else was printed, never the
// terminal's control sequences.
TEST(TerminalProgress, ALogGetsPhaseChangesAndHeartbeatsOnly) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    terminal_progress p(f, false);
    p.heartbeat_s = 1e9;
    progress_state s;
    s.phase = "starting actors";
    p.update(s);
    p.update(s);
    s.phase = "first step";
    for (int i = 0; i < 50; ++i) p.update(s);
    p.line("step   1 | reward 0.5");
    p.update(training(1, 10));
    p.heartbeat_s = 0;
    p.update(training(1, 11));
  }
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find("\033["), std::string::npos) << out;
  EXPECT_EQ(count(out, "starting actors"), 1u) << out;
  EXPECT_EQ(count(out, "first step"), 1u) << out;
  EXPECT_EQ(count(out, "step   1 | reward 0.5\n"), 1u) << out;
  EXPECT_EQ(count(out, "training ["), 2u) << out;  // the phase change, then a heartbeat
  EXPECT_EQ(count(out, "\n"), 5u) << out;
}

// On a terminal: the line is redrawn in place; a permanent line erases it, prints, and draws it again; a
// log message erases it first; at the end nothing of it is left.
TEST(TerminalProgress, ATerminalGetsOneLineRedrawnInPlace) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    terminal_progress p(f, true);
    p.update(training(1, 10));
    std::string out = contents(f);
    EXPECT_EQ(out.rfind("\r| training [", 0), 0u) << out;
    EXPECT_EQ(out.substr(out.size() - 3), "\033[K");
    EXPECT_EQ(out.find('\n'), std::string::npos);
    p.line("step   2 | reward 0.7");
    out = contents(f);
    EXPECT_NE(out.find("\r\033[Kstep   2 | reward 0.7\n\r"), std::string::npos) << out;
    const size_t before = out.size();
    terminal_progress::erase_current();
    out = contents(f);
    EXPECT_EQ(out.substr(before), "\r\033[K");
    terminal_progress::erase_current();  // nothing shown: nothing written
    EXPECT_EQ(contents(f).size(), before + 4);
    auto s = training(2, 12);
    s.phase = "finishing";
    p.update(s);
    EXPECT_NE(contents(f).find(" finishing ["), std::string::npos);
  }
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K") << "the live line is erased at the end";
}

}  // namespace
}  // namespace crucible::runtime
