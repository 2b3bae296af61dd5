#pragma once
// What the short CPU training runs of these tests share: the overrides that make a run small enough for CI
// (one task, one group of four in flight, two learner steps, a tiny policy and timing protocol), and the
// candidates the run stored in its replay database.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sqlite3.h>

#include <gtest/gtest.h>

#include "messages/envelope.hpp"
#include "messages/scored.hpp"
#include "runtime/hosting/train_session.hpp"

namespace crucible::test {

inline std::vector<std::string> short_run_overrides(const std::string& dir) {
  return {"run.dir=" + dir,
          "run.max_steps=2",
          "run.max_minutes=5",
          "run.progress=false",
          "run.log_level=warn",
          "run.checkpoint_every=2",
          "tasks.include=[bias_gelu]",
          "learner.group_size=4",
          "learner.groups_per_step=1",
          "async.groups_in_flight=1",
          "benchmark.seeds=2",
          "benchmark.input_sets=2",
          "benchmark.warmup=1",
          "benchmark.buckets=2",
          "benchmark.trials=1",
          "benchmark.timeout_s=60",
          "policy.d_model=32",
          "policy.layers=1",
          "policy.heads=2"};
}

/// Prepares the run and trains it to the end; the summary, after checking that the run did its steps and left
/// no candidate in flight (nullopt, with a test failure, when it could not run).
inline std::optional<runtime::train_summary> train_to_the_end(
    const runtime::config& cfg, std::shared_ptr<const runtime::role_registry> registry) {
  auto ctx = runtime::prepare_run(cfg, false);
  EXPECT_TRUE(ctx) << ctx.message();
  if (!ctx) return std::nullopt;
  auto s = runtime::run_training(*ctx, std::move(registry));
  EXPECT_TRUE(s) << s.message();
  if (!s) return std::nullopt;
  EXPECT_EQ(s->steps, cfg.run.max_steps);
  const auto& c = s->conductor;
  EXPECT_GT(c.candidates_generated, 0);
  EXPECT_EQ(c.candidates_in_flight, 0);
  EXPECT_EQ(c.candidates_generated, c.candidates_scored + c.candidates_abandoned);
  return *s;
}

inline std::vector<scored_candidate> stored_candidates(const std::string& db_path) {
  std::vector<scored_candidate> out;
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) return out;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT record FROM candidates", -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string blob(static_cast<const char*>(sqlite3_column_blob(s, 0)), sqlite3_column_bytes(s, 0));
    auto rec = decode_as<scored_candidate>(blob);
    EXPECT_TRUE(rec) << rec.message();
    if (rec) out.push_back(std::move(*rec));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

}  // namespace crucible::test
