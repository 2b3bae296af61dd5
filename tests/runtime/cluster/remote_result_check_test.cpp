// A benchmark result from the wire is used only if its speedups follow from the times it carries.
#include "runtime/cluster/remote_result_check.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace crucible::runtime {
namespace {

// As the protocol fills it: per-bucket means, their ratios, the medians.
bench_result measured() {
  bench_result r;
  r.status = "ok";
  r.correct = true;
  r.timed = true;
  auto& t = r.timing;
  t.eager_ms = {1.00, 1.02, 0.98};
  t.candidate_ms = {0.50, 0.50, 0.49};
  t.graph_ms = {0.95, 0.96, 0.94};
  for (size_t i = 0; i < 3; ++i) t.bucket_speedups.push_back(t.eager_ms[i] / t.candidate_ms[i]);
  t.eager_ms_median = 1.00;
  t.candidate_ms_median = 0.50;
  t.speedup = 2.0;  // the median of 2.0, 2.04, 2.0
  t.graph_ms_median = 0.95;
  t.speedup_vs_graph = 0.94 / 0.49;  // the median of 1.9, 1.92 and 1.918
  r.speedup_vs_eager = t.speedup;
  r.speedup_vs_graph = t.speedup_vs_graph;
  return r;
}

TEST(RemoteResultCheck, AMeasurementThatAddsUpIsUsed) {
  auto r = measured();
  EXPECT_TRUE(check_remote_bench(r)) << check_remote_bench(r).message();
  bench_result untimed;  // an incorrect candidate: no timing, no speedup
  untimed.status = "ok";
  EXPECT_TRUE(check_remote_bench(untimed));
}

TEST(RemoteResultCheck, AForgedSpeedupIsRefused) {
  auto r = measured();
  r.speedup_vs_eager = 9999;
  auto st = check_remote_bench(r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("its buckets' median is 2x"), std::string::npos) << st.message();
  r = measured();
  r.timing.speedup = r.speedup_vs_eager = 9999;  // both fields forged, the buckets left as measured
  EXPECT_FALSE(check_remote_bench(r));
  r = measured();
  r.timing.bucket_speedups = {9999, 9999, 9999};
  r.timing.speedup = r.speedup_vs_eager = 9999;  // buckets forged, the times left
  EXPECT_NE(check_remote_bench(r).message().find("bucket 0 claims 9999x"), std::string::npos);
}

TEST(RemoteResultCheck, ASpeedupWithoutAMeasurementIsRefused) {
  bench_result r;
  r.status = "ok";
  r.correct = true;
  r.speedup_vs_eager = 9999;
  EXPECT_NE(check_remote_bench(r).message().find("without having been timed"), std::string::npos);
  r.timed = true;
  EXPECT_NE(check_remote_bench(r).message().find("no bucket speedups"), std::string::npos);
}

TEST(RemoteResultCheck, TimesThatAreNotTimesAreRefused) {
  auto r = measured();
  r.timing.candidate_ms[1] = 0.0;
  EXPECT_FALSE(check_remote_bench(r));
  r = measured();
  r.timing.eager_ms[2] = std::nan("");
  EXPECT_FALSE(check_remote_bench(r));
  r = measured();
  r.timing.candidate_ms.pop_back();
  EXPECT_FALSE(check_remote_bench(r));
  r = measured();
  r.timing.candidate_ms_median = 0.01;  // a median no bucket supports
  EXPECT_FALSE(check_remote_bench(r));
}

TEST(RemoteResultCheck, TheGraphSpeedupMustFollowFromItsTimes) {
  auto r = measured();
  r.speedup_vs_graph = r.timing.speedup_vs_graph = 50;
  EXPECT_FALSE(check_remote_bench(r));
  r = measured();
  r.timing.graph_ms.clear();
  EXPECT_NE(check_remote_bench(r).message().find("no times for"), std::string::npos);
}

}  // namespace
}  // namespace crucible::runtime
