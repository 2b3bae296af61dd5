#pragma once
// A candidate after the whole pipeline, and a GRPO group of them: what the replay buffer stores and the
// learner trains on.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "messages/candidate.hpp"
#include "messages/evaluation.hpp"

namespace crucible {

struct scored_candidate {
  candidate cand;
  compile_result compiled;
  bench_result bench;
  verdict judged;
  double reward = 0.0;
  MSGPACK_DEFINE_MAP(cand, compiled, bench, judged, reward);
};

struct scored_group {
  std::string group_id;
  std::string task;
  int64_t policy_version = 0;  ///< version that generated the group
  std::vector<scored_candidate> members;
  double created_unix = 0.0;
  bool partial = false;  ///< cut short by a stop: stored for the record, never trained on
  /// While the group is in flight (recorded, not yet stored): the stage each member is to run next, or
  /// "scored". Empty once the group is stored.
  std::vector<std::string> stages;
  MSGPACK_DEFINE_MAP(group_id, task, policy_version, members, created_unix, partial, stages);
};

/// Groups handed to the learner, all within the staleness bound of `learner_version`.
struct group_batch {
  int64_t learner_version = 0;
  std::vector<scored_group> groups;
  int32_t dropped_stale = 0;                   ///< groups skipped for being older than async.max_staleness
  int64_t candidates_total = 0;                ///< candidates stored since the run began
  std::map<std::string, double> speedup_best;  ///< task -> best verified speedup vs eager so far
  MSGPACK_DEFINE_MAP(learner_version, groups, dropped_stale, candidates_total, speedup_best);
};

}  // namespace crucible
