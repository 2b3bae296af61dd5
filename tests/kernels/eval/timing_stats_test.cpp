// The timing protocol's arithmetic without a device: summaries, and the cross-check of a CUDA call's clocks
// (stream events against the host's device-wide wall time).
#include "kernels/eval/timing_stats.hpp"

#include <gtest/gtest.h>

namespace crucible::kernels {
namespace {

TEST(TimingStats, MedianMeanCv) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
  EXPECT_DOUBLE_EQ(mean({1, 2, 3}), 2.0);
  EXPECT_DOUBLE_EQ(cv({5}), 0.0);
  EXPECT_NEAR(cv({9, 10, 11}), 0.1, 1e-12);  // sample sd 1 over mean 10
}

TEST(TimingStats, WorkThatStaysOnTheStreamIsChargedItsEventTime) {
  clock_check k;
  k.null_wall_ms = 0.010;
  k.null_tail_ms = 0.004;
  call_clocks c{0.200, 0.215, 0.004};  // device idle 4 us after our stream, as after an empty region
  EXPECT_FALSE(outside_stream(c, k));
  EXPECT_DOUBLE_EQ(charged_ms(c, k), 0.200);
}

// Work on another stream that ends within the tail threshold after the call's stream is no evidence, but it
// is not free either: the tail beyond an empty region's is charged.
TEST(TimingStats, AShortTailIsCharged) {
  clock_check k;
  k.null_wall_ms = 0.010;
  k.null_tail_ms = 0.004;
  call_clocks c{0.150, 0.205, 0.040};
  EXPECT_FALSE(outside_stream(c, k));
  EXPECT_NEAR(charged_ms(c, k), 0.186, 1e-12);
  call_clocks quicker{0.150, 0.160, 0.002};  // a wait quicker than the empty region's costs nothing
  EXPECT_DOUBLE_EQ(charged_ms(quicker, k), 0.150);
}

TEST(TimingStats, WorkOnAnotherStreamIsChargedTheDeviceWideTime) {
  clock_check k;
  k.null_wall_ms = 0.010;
  // The candidate's stream saw 5 us; the device was busy 0.9 ms longer (its own stream).
  call_clocks c{0.005, 0.930, 0.900};
  EXPECT_TRUE(outside_stream(c, k));
  EXPECT_NEAR(charged_ms(c, k), 0.920, 1e-12);
  // Never charged less than the events say.
  call_clocks d{0.300, 0.200, 0.100};
  EXPECT_DOUBLE_EQ(charged_ms(d, k), 0.300);
}

TEST(TimingStats, AGatedCallIsChargedItsHostTimeWhenThatIsLonger) {
  clock_check k;
  k.null_wall_ms = 0.010;
  k.null_tail_ms = 0.004;
  // A library call that spends 0.3 ms on the host to enqueue 0.2 ms of device work: it cannot be
  // repeated faster than the host issues it.
  call_clocks slow_host{0.200, 0.212, 0.004, 0.300};
  EXPECT_DOUBLE_EQ(charged_ms(slow_host, k), 0.300);
  // The usual case: a few microseconds of host time behind the device's.
  call_clocks fast_host{0.200, 0.212, 0.004, 0.012};
  EXPECT_DOUBLE_EQ(charged_ms(fast_host, k), 0.200);
  // Work on a side stream that the host waited for inside the call (hidden from a gated stream's events)
  // is in the host's time; work it did not wait for is in the device-wide time.
  call_clocks waited{0.005, 0.015, 0.002, 0.950};
  EXPECT_DOUBLE_EQ(charged_ms(waited, k), 0.950);
  call_clocks escaped{0.005, 0.930, 0.900, 0.010};
  EXPECT_NEAR(charged_ms(escaped, k), 0.920, 1e-12);
}

// Work started between calls (a helper thread that launches when it sees the next call coming) runs while the
// worker flushes the L2 and takes the device: the flush takes longer than on an idle device, and the
// difference is charged to the call.
TEST(TimingStats, WorkDuringTheFlushIsChargedToTheCall) {
  clock_check k;
  k.null_tail_ms = 0.004;
  k.null_before_ms = 0.100;
  call_clocks idle{0.200, 0.212, 0.004, 0.0, 0.110};  // 10 us over an idle device's: jitter
  EXPECT_FALSE(busy_before(idle, k));
  EXPECT_DOUBLE_EQ(charged_ms(idle, k), 0.200);
  call_clocks busy{0.120, 0.130, 0.004, 0.0, 0.180};  // 80 us of the candidate's work ran in the flush
  EXPECT_TRUE(busy_before(busy, k));
  EXPECT_NEAR(charged_ms(busy, k), 0.200, 1e-12);
  k.null_before_ms = 1.0;  // the threshold grows with the flush: 30 us over 1 ms is jitter
  EXPECT_FALSE(busy_before({0.1, 0.1, 0.0, 0.0, 1.11}, k));
  EXPECT_TRUE(busy_before({0.1, 0.1, 0.0, 0.0, 1.13}, k));
}

TEST(TimingStats, ATailWithinJitterIsNotOutsideWork) {
  clock_check k;
  EXPECT_FALSE(outside_stream({1.0, 1.1, 0.04}, k));   // 40 us after a 1 ms call: a host hiccup
  EXPECT_TRUE(outside_stream({1.0, 1.5, 0.4}, k));     // 400 us: work
  EXPECT_FALSE(outside_stream({10.0, 10.6, 0.5}, k));  // 5% of a 10 ms call
}

TEST(TimingStats, IsolatedSpansAreHostNoiseOnlyTheRuleIsEvidence) {
  EXPECT_FALSE(seen_as_the_rule(0, 6));
  EXPECT_FALSE(seen_as_the_rule(1, 6));    // one preempted wait
  EXPECT_FALSE(seen_as_the_rule(2, 6));    // two tails of six: still the exception (seen on an H200 host)
  EXPECT_FALSE(seen_as_the_rule(5, 70));   // a few in a timed phase under a busy compiler pool
  EXPECT_FALSE(seen_as_the_rule(3, 78));   // tails up to 0.62 ms after a cuDNN program's calls (honest, H200)
  EXPECT_FALSE(seen_as_the_rule(1, 151));  // a flush 0.62 ms longer once (honest, H200)
  EXPECT_FALSE(seen_as_the_rule(2, 3));    // two short tails of three calls (honest, on an H200)
  EXPECT_FALSE(seen_as_the_rule(1, 1));    // one call alone never convicts
  EXPECT_TRUE(seen_as_the_rule(3, 6));     // half the calls
  EXPECT_TRUE(seen_as_the_rule(3, 3));     // every call of an untimed evaluation
  EXPECT_TRUE(seen_as_the_rule(6, 6));     // a side stream at every call
  EXPECT_TRUE(seen_as_the_rule(84, 151));  // a watcher that ran during the flush (corpus hack)
}

TEST(TimingStats, WallExceedingEventsOverManyCalls) {
  clock_check k;
  k.null_wall_ms = 0.01;
  std::vector<call_clocks> honest(9, call_clocks{0.2, 0.215, 0.0});
  EXPECT_FALSE(wall_exceeds_events(honest, k));
  std::vector<call_clocks> hidden(9, call_clocks{0.02, 0.31, 0.0});
  EXPECT_TRUE(wall_exceeds_events(hidden, k));
  EXPECT_FALSE(wall_exceeds_events({}, k));
}

TEST(TimingStats, Roofline) {
  // 1 GB at 4 TB/s: 0.25 ms; FLOPs bound when larger.
  EXPECT_NEAR(roofline_ms(1e9, 0, 4e12, 0), 0.25, 1e-12);
  EXPECT_NEAR(roofline_ms(1e6, 1e12, 4e12, 50e12), 20.0, 1e-9);
  EXPECT_DOUBLE_EQ(roofline_ms(1e9, 1e9, 0, 0), 0.0);
}

TEST(TimingStats, EarlyStopOnlyAfterTheFirstOfSeveralBuckets) {
  EXPECT_TRUE(stop_early(0, 7, 5.0, 1.0, 6.0));
  EXPECT_FALSE(stop_early(0, 7, 5.0, 1.0, 4.0));
  EXPECT_FALSE(stop_early(1, 7, 5.0, 1.0, 60.0));
  EXPECT_FALSE(stop_early(0, 1, 5.0, 1.0, 60.0));
  EXPECT_FALSE(stop_early(0, 7, 0.0, 1.0, 60.0));
}

struct fake_run {
  bool failed = false, early_stop = false;
  double spread = 0.0;
};

TEST(TimingStats, VarianceGateKeepsTheSteadierRunAndStops) {
  std::vector<std::string> notes;
  int reruns = -1, calls = 0;
  std::vector<double> spreads = {0.20, 0.05};
  auto best = variance_gate(
      fake_run{false, false, 0.30}, 0.10, 3,
      [&] {
        return fake_run{false, false, spreads[calls++]};
      },
      reruns, notes);
  EXPECT_EQ(reruns, 2);  // 0.30 -> 0.20 -> 0.05, then steady enough
  EXPECT_DOUBLE_EQ(best.spread, 0.05);
  EXPECT_EQ(notes.size(), 2u);
  // Capped, a failed re-run fails the whole, and an early stop is not re-run.
  calls = 0;
  spreads = {0.5, 0.5, 0.5};
  EXPECT_DOUBLE_EQ(variance_gate(
                       fake_run{false, false, 0.3}, 0.1, 1,
                       [&] {
                         return fake_run{false, false, spreads[calls++]};
                       },
                       reruns, notes)
                       .spread,
                   0.3);
  EXPECT_EQ(reruns, 1);
  EXPECT_TRUE(variance_gate(
                  fake_run{false, false, 0.3}, 0.1, 2,
                  [] {
                    return fake_run{true, false, 0};
                  },
                  reruns, notes)
                  .failed);
  EXPECT_EQ(variance_gate(
                fake_run{false, true, 0.3}, 0.1, 2, [] { return fake_run{}; }, reruns, notes)
                .spread,
            0.3);
  EXPECT_EQ(reruns, 0);
}

TEST(TimingStats, WarmUpTakesBothTheRoundsAndTheTime) {
  EXPECT_TRUE(warming_up(0, 3, 0.0, 0.0));
  EXPECT_TRUE(warming_up(2, 3, 100.0, 0.0));  // rounds still due
  EXPECT_FALSE(warming_up(3, 3, 0.5, 0.0));   // no time asked
  EXPECT_TRUE(warming_up(3, 3, 10.0, 50.0));  // rounds done, time not
  EXPECT_FALSE(warming_up(3, 3, 50.0, 50.0));
  EXPECT_FALSE(warming_up(0, 0, 0.0, 0.0));    // no warm-up at all
  EXPECT_TRUE(warming_up(40, 0, 20.0, 25.0));  // time alone
}

}  // namespace
}  // namespace crucible::kernels
