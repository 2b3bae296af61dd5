// An evaluation in a child forked for it: its answer comes back, its state and whatever it started end with
// it, and a child that dies is a crash the runner retries — without a device or Python.
#include "kernels/eval_worker/forked_evaluation.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string>

namespace crucible::kernels {
namespace {

int counter = 0;

bool alive(pid_t pid) {
  return kill(pid, 0) == 0;
}

std::string notes_of(const bench_result& r) {
  std::string all;
  for (const auto& n : r.notes) all += n + "\n";
  return all;
}

// A process of the child's that outlives it: it leaves its parent's group and sleeps.
pid_t start_sleeper(bool own_group) {
  const pid_t p = fork();
  if (p == 0) {
    if (own_group) setsid();
    for (;;) pause();
  }
  return p;
}

TEST(ForkedEvaluation, AnswersWithTheChildsResultAndLeavesThisProcessAsItWas) {
  counter = 0;
  auto out = evaluate_forked(
      [] {
        counter += 41;  // the child's copy
        bench_result r;
        r.status = "ok";
        r.notes.push_back("counted " + std::to_string(++counter) + " in " + std::to_string(getpid()));
        return r;
      },
      {});
  EXPECT_EQ(out.result.status, "ok");
  EXPECT_FALSE(out.left_running);
  EXPECT_EQ(counter, 0);
  ASSERT_GE(out.result.notes.size(), 2u);
  EXPECT_EQ(out.result.notes[0].rfind("counted 42 in ", 0), 0u) << notes_of(out.result);
  EXPECT_NE(out.result.notes[0], "counted 42 in " + std::to_string(getpid()));
  EXPECT_NE(notes_of(out.result).find("forked for it in"), std::string::npos) << notes_of(out.result);
  EXPECT_NE(notes_of(out.result).find("ended with exit code 0"), std::string::npos) << notes_of(out.result);
}

TEST(ForkedEvaluation, AChildThatDiesIsACrashTheRunnerTriesAgain) {
  auto out = evaluate_forked(
      []() -> bench_result {
        std::raise(SIGSEGV);
        return {};
      },
      {});
  EXPECT_EQ(out.result.status, "crash");
  EXPECT_TRUE(out.result.worker_died);
  EXPECT_NE(out.result.error.find("SIGSEGV"), std::string::npos) << out.result.error;
  EXPECT_FALSE(out.left_running);
  auto thrown = evaluate_forked([]() -> bench_result { throw std::runtime_error("no such module"); }, {});
  EXPECT_EQ(thrown.result.status, "error");
  EXPECT_NE(thrown.result.error.find("no such module"), std::string::npos) << thrown.result.error;
}

// The descriptors it is told to close (the client's pipes) are closed in the child before it evaluates.
TEST(ForkedEvaluation, TheChildClosesTheDescriptorsItIsGiven) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto out = evaluate_forked(
      [&] {
        bench_result r;
        r.status = fcntl(p[1], F_GETFD) < 0 && fcntl(p[0], F_GETFD) >= 0 ? "ok" : "error";
        return r;
      },
      {p[1]});
  EXPECT_EQ(out.result.status, "ok");
  EXPECT_GE(fcntl(p[1], F_GETFD), 0) << "closed in the child only";
  close(p[0]);
  close(p[1]);
}

// What the child started and left — in its own session, or holding the answer's pipe and then orphaned —
// is killed and reaped after it; a child this process had before is left alone.
TEST(ForkedEvaluation, WhatTheChildLeftRunningIsEndedAndNothingElse) {
  ASSERT_TRUE(adopt_orphans());
  const pid_t mine = start_sleeper(false);
  ASSERT_GT(mine, 0);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto out = evaluate_forked(
      [&]() -> bench_result {
        const pid_t a = start_sleeper(true);
        // A grandchild of its own that inherits the answer's pipe, then orphaned by its parent.
        const pid_t middle = fork();
        if (middle == 0) {
          const pid_t b = start_sleeper(false);
          (void)!write(report[1], &b, sizeof b);
          _exit(0);
        }
        waitpid(middle, nullptr, 0);
        (void)!write(report[1], &a, sizeof a);
        _exit(3);  // dies without answering, the pipe still held by a sleeper
      },
      {});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pid_t left[2] = {0, 0};
  ASSERT_EQ(read(report[0], &left[0], sizeof left[0]), static_cast<ssize_t>(sizeof left[0]));
  ASSERT_EQ(read(report[0], &left[1], sizeof left[1]), static_cast<ssize_t>(sizeof left[1]));
  close(report[0]);
  close(report[1]);
  EXPECT_EQ(out.result.status, "crash");
  EXPECT_NE(out.result.error.find("exit code 3"), std::string::npos) << out.result.error;
  EXPECT_FALSE(out.left_running);
  EXPECT_LT(s, 10.0) << "a sleeper holding the answer's pipe must not keep the parent waiting";
  for (pid_t p : left) EXPECT_FALSE(alive(p)) << p << " outlived the evaluation";
  EXPECT_TRUE(alive(mine)) << "a child that was not the evaluation's was killed";
  kill(mine, SIGKILL);
  waitpid(mine, nullptr, 0);
}

}  // namespace
}  // namespace crucible::kernels
