#pragma once
// The replay buffer's storage: every scored candidate and group, persisted in SQLite (WAL, so readers never
// block the writer and a crash loses at most the last transaction), with in-memory indexes for the two hot
// queries: contrastive exemplars per task, and pending groups for the learner. Reopening a run's database
// rebuilds the indexes, so --resume continues where the run stopped.
//
// A group's life in the database: in_flight (recorded by the conductor as soon as it is generated, its
// candidates with outcome "pending" and the stage each is at) -> pending (scored, queued for the learner) or
// partial (cut short by a stop) -> taken (handed to the learner at version V) -> trained (the learner has
// moved past V, so V's step included it) or stale (too old to train on).
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/prompt.hpp"
#include "messages/scored.hpp"

struct sqlite3;

namespace crucible::runtime {

struct replay_options {
  std::vector<double> bucket_edges = {0.5, 0.9, 1.1, 1.5, 3.0};
  double temperature = 1.0;
  int64_t max_staleness = 2;
  /// A resumed run whose learner restarts from the weights of version V: the groups taken at version V or
  /// later were trained into weights that are lost, so they are queued again (-1: none, a fresh run).
  int64_t untrain_from_version = -1;
  /// Multi-turn refinement: the latest refine_turns attempts per task are kept for prompts (0: none).
  int64_t refine_turns = 0;
  std::string target = "cpu";  ///< how an attempt's bare source is fenced
};

/// One stored group, as a report sees it.
struct stored_group {
  std::string group_id;
  std::string task;
  std::string state;  ///< in_flight | pending | taken | trained | stale | partial
  int64_t policy_version = 0;
  double created_unix = 0.0;
  double reward_mean = 0.0;
  int64_t members = 0;
};

/// A read-only summary of a replay database: groups in creation order, candidates per outcome, best verified
/// speedup per task.
struct replay_summary {
  std::vector<stored_group> groups;
  std::map<std::string, int64_t> outcomes;
  std::map<std::string, double> speedup_best;
  std::map<std::string, double> speedup_best_vs_graph;  ///< CUDA: that best candidate vs the CUDA graph
  std::map<std::string, int64_t> reviews;     ///< the judge stage's findings (upheld | hack | inconclusive)
  std::map<std::string, int64_t> hack_flags;  ///< the flags of candidates judged hacks, each counted once
  int64_t candidates = 0;
};

/// What a live dashboard shows of a run's database, read however large it has grown: candidates per
/// outcome, each task's best passing candidate, and the newest hacks.
struct replay_glance {
  std::map<std::string, int64_t> outcomes;
  std::vector<scored_candidate> best;  ///< per task (name order): the highest speedup, earliest on a tie
  std::vector<scored_candidate> recent_hacks;  ///< newest first
};

/// Thread contract: one owner (the replay_buffer actor).
class replay_store {
 public:
  static expected<replay_store> open(const std::string& path, replay_options options, uint64_t seed);

  /// Reads a run's database without modifying it (crucible report).
  static expected<replay_summary> summarize(const std::string& path);
  /// Every stored candidate (not those in flight) of a run's database, read-only, in creation order; with
  /// `outcome` set, only those with that verdict ("pass"). The sft stage's corpus and the stage reports.
  static expected<std::vector<scored_candidate>> read_scored(const std::string& path,
                                                             const std::string& outcome = {});
  /// replay_glance of a run's database, read-only, while its run goes on (the dashboard), with at most
  /// `hacks` recent hacks.
  static expected<replay_glance> glance(const std::string& path, int64_t hacks);
  replay_store(replay_store&& other) noexcept;
  replay_store& operator=(replay_store&&) = delete;
  ~replay_store();

  struct insert_result {
    int64_t inserted = 0;    ///< candidates newly stored
    int64_t duplicates = 0;  ///< candidates already stored under the same id (ignored)
  };
  /// Stores a scored group and queues it for the learner (a partial group is stored, not queued). A group
  /// or candidate id seen before is ignored, so a re-sent group is never counted twice.
  expected<insert_result> insert(const scored_group& group);

  /// Records a group the conductor works on: each member (as scored so far) with outcome "pending" at the
  /// stage `group.stages` names. Recording again moves a member on; a member or group already stored as
  /// scored is left as it is. Returns the members written.
  expected<int64_t> record(const scored_group& group);

  /// The groups recorded and not stored, each member with the stage it was at (restore after a kill).
  std::vector<scored_group> in_flight() const;

  /// Stores every in-flight group as partial, its unfinished members as abandoned with `why`; returns them.
  expected<int64_t> abandon_in_flight(const std::string& why);

  /// Up to `k` exemplars for `task` from distinct speedup buckets, buckets drawn by a softmax over their
  /// mean speedups at the configured temperature (CUDA-L1), a candidate drawn uniformly within a bucket.
  std::vector<exemplar> exemplars(const std::string& task, int k);

  /// The task's latest scored attempts worth feeding back (runtime/pipeline/attempt_feedback), oldest
  /// first, at most refine_turns of them; empty when refinement is off.
  std::vector<attempt> attempts(const std::string& task) const;

  /// Up to `n` pending groups, oldest first, none older than learner_version - max_staleness; older
  /// pending groups are marked stale and counted in dropped_stale. Returned groups are marked taken at
  /// `learner_version`; groups taken at an older version are marked trained (the learner trains what it took
  /// before it moves to a newer version).
  group_batch take_groups(int64_t learner_version, int n);

  int bucket_of(double speedup) const;
  int64_t candidates_total() const { return candidates_total_; }
  /// Groups queued again at open (untrain_from_version): their training was not in the checkpoint.
  int64_t untrained() const { return untrained_; }
  size_t pending_groups() const { return pending_.size(); }
  const std::map<std::string, double>& speedup_best() const { return best_; }

 private:
  replay_store(sqlite3* db, replay_options options, uint64_t seed);
  status migrate();
  status untrain(int64_t from_version);
  status load();
  status exec(const std::string& sql);
  void note_attempt(const std::string& task, const scored_candidate& c);
  std::string group_state(const std::string& group_id) const;
  /// The groups in `state` with their members (and, in flight, their stages), oldest first.
  expected<std::vector<scored_group>> groups_in(
      const char* state) const;  ///< "" when the group is not stored

  struct indexed {
    std::string id;
    std::string program;
    std::string source;
    double speedup = 0.0;
  };
  sqlite3* db_ = nullptr;
  replay_options options_;
  std::mt19937_64 rng_;
  int64_t untrained_ = 0;
  std::map<std::string, std::map<int, std::vector<indexed>>> by_task_bucket_;
  std::map<std::string, std::deque<attempt>> recent_;  ///< per task, newest last
  std::deque<scored_group> pending_;
  std::map<std::string, double> best_;
  int64_t candidates_total_ = 0;
};

}  // namespace crucible::runtime
