#include "runtime/storage/replay_store.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <sqlite3.h>

#include "messages/envelope.hpp"
#include "runtime/hosting/fail_points.hpp"
#include "runtime/pipeline/attempt_feedback.hpp"

namespace crucible::runtime {
namespace {

// RAII for prepared statements; errors are reported through the store's status values.
struct statement {
  sqlite3_stmt* s = nullptr;
  statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~statement() { sqlite3_finalize(s); }
  explicit operator bool() const { return s != nullptr; }
  void text(int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void blob(int i, const std::string& v) {
    sqlite3_bind_blob(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void integer(int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  void real(int i, double v) { sqlite3_bind_double(s, i, v); }
};

std::string column_text(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s, i)) : std::string();
}

std::string column_blob(sqlite3_stmt* s, int i) {
  const void* p = sqlite3_column_blob(s, i);
  return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(s, i)) : std::string();
}

// Columns 1-6 of a candidates row, as record() and insert() both write them: what identifies a candidate
// and where it came from.
void bind_identity(statement& st, const scored_group& group, const scored_candidate& m) {
  st.text(1, m.cand.id);
  st.text(2, group.group_id);
  st.text(3, group.task);
  st.text(4, m.cand.content_hash);
  st.integer(5, m.cand.policy_version);
  st.text(6, m.cand.program);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
  return out;
}

const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS candidates (
  id TEXT PRIMARY KEY,
  group_id TEXT NOT NULL,
  task TEXT NOT NULL,
  content_hash TEXT,
  policy_version INTEGER,
  program TEXT,
  outcome TEXT,
  flags TEXT,
  speedup REAL,
  reward REAL,
  created REAL,
  record BLOB NOT NULL,
  stage TEXT
);
CREATE INDEX IF NOT EXISTS candidates_by_task ON candidates(task, outcome);
CREATE INDEX IF NOT EXISTS candidates_by_group ON candidates(group_id);
CREATE TABLE IF NOT EXISTS groups (
  group_id TEXT PRIMARY KEY,
  task TEXT NOT NULL,
  policy_version INTEGER,
  created REAL,
  state TEXT NOT NULL,
  trained_version INTEGER
);
)sql";

}  // namespace

replay_store::replay_store(sqlite3* db, replay_options options, uint64_t seed)
    : db_(db), options_(std::move(options)), rng_(seed) {}

replay_store::replay_store(replay_store&& o) noexcept
    : db_(o.db_),
      options_(std::move(o.options_)),
      rng_(o.rng_),
      untrained_(o.untrained_),
      by_task_bucket_(std::move(o.by_task_bucket_)),
      recent_(std::move(o.recent_)),
      pending_(std::move(o.pending_)),
      best_(std::move(o.best_)),
      candidates_total_(o.candidates_total_) {
  o.db_ = nullptr;
}

replay_store::~replay_store() {
  if (db_) sqlite3_close(db_);
}

status replay_store::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return make_error("replay database: " + msg);
  }
  return {};
}

expected<replay_store> replay_store::open(const std::string& path, replay_options options, uint64_t seed) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error("cannot open replay database '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  replay_store store(db, std::move(options), seed);
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;"})
    if (auto st = store.exec(pragma); !st) return st.err();
  if (auto st = store.exec(schema); !st) return st.err();
  if (auto st = store.migrate(); !st) return st.err();
  if (store.options_.untrain_from_version >= 0)
    if (auto st = store.untrain(store.options_.untrain_from_version); !st) return st.err();
  if (auto st = store.load(); !st) return st.err();
  return store;
}

int replay_store::bucket_of(double speedup) const {
  const auto& e = options_.bucket_edges;
  return static_cast<int>(std::upper_bound(e.begin(), e.end(), speedup) - e.begin());
}

// A database written before candidates had a stage gets the column (a run resumed across the upgrade).
status replay_store::migrate() {
  statement cols(db_, "PRAGMA table_info(candidates)");
  while (cols && sqlite3_step(cols.s) == SQLITE_ROW)
    if (column_text(cols.s, 1) == "stage") return {};
  return exec("ALTER TABLE candidates ADD COLUMN stage TEXT;");
}

status replay_store::untrain(int64_t from_version) {
  statement back(db_,
                 "UPDATE groups SET state = 'pending', trained_version = NULL WHERE state IN ('taken', "
                 "'trained', 'stale') AND trained_version >= ?");
  if (!back) return make_error(std::string("replay database: ") + sqlite3_errmsg(db_));
  back.integer(1, from_version);
  if (sqlite3_step(back.s) != SQLITE_DONE)
    return make_error(std::string("replay database: queuing groups again: ") + sqlite3_errmsg(db_));
  untrained_ = sqlite3_changes(db_);
  return {};
}

status replay_store::load() {
  statement count(db_, "SELECT COUNT(*) FROM candidates WHERE outcome != 'pending'");
  if (count && sqlite3_step(count.s) == SQLITE_ROW) candidates_total_ = sqlite3_column_int64(count.s, 0);
  statement passed(db_, "SELECT id, task, program, speedup, record FROM candidates WHERE outcome = 'pass'");
  if (!passed) return make_error(std::string("replay database: ") + sqlite3_errmsg(db_));
  while (sqlite3_step(passed.s) == SQLITE_ROW) {
    auto rec = decode_as<scored_candidate>(column_blob(passed.s, 4));
    indexed e{column_text(passed.s, 0), column_text(passed.s, 2), rec ? rec->cand.source : std::string(),
              sqlite3_column_double(passed.s, 3)};
    std::string task = column_text(passed.s, 1);
    best_[task] = std::max(best_[task], e.speedup);
    by_task_bucket_[task][bucket_of(e.speedup)].push_back(std::move(e));
  }
  if (options_.refine_turns > 0) {
    statement scored(
        db_, "SELECT task, record FROM candidates WHERE outcome != 'pending' ORDER BY created, rowid");
    if (!scored) return make_error(std::string("replay database: ") + sqlite3_errmsg(db_));
    while (sqlite3_step(scored.s) == SQLITE_ROW)
      if (auto rec = decode_as<scored_candidate>(column_blob(scored.s, 1)))
        note_attempt(column_text(scored.s, 0), *rec);
  }
  // Groups that were stored but not yet trained on are queued again.
  auto pending = groups_in("pending");
  if (!pending) return pending.err();
  for (auto& g : *pending) pending_.push_back(std::move(g));
  return {};
}

expected<replay_store::insert_result> replay_store::insert(const scored_group& group) {
  insert_result result;
  if (auto state = group_state(group.group_id); !state.empty() && state != "in_flight") {
    result.duplicates = static_cast<int64_t>(group.members.size());
    return result;
  }
  if (auto st = exec("BEGIN IMMEDIATE;"); !st) return st.err();
  // A member recorded as pending is replaced by its scored record; one already scored is kept.
  statement ins(
      db_,
      "INSERT INTO candidates (id, group_id, task, content_hash, policy_version, program, outcome, flags, "
      "speedup, reward, created, record, stage) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,NULL) ON CONFLICT(id) DO "
      "UPDATE SET group_id = excluded.group_id, task = excluded.task, content_hash = excluded.content_hash, "
      "policy_version = excluded.policy_version, program = excluded.program, outcome = excluded.outcome, "
      "flags = excluded.flags, speedup = excluded.speedup, reward = excluded.reward, record = "
      "excluded.record, stage = NULL WHERE candidates.outcome = 'pending'");
  std::vector<const scored_candidate*> fresh;
  for (const auto& m : group.members) {
    sqlite3_reset(ins.s);
    bind_identity(ins, group, m);
    ins.text(7, m.judged.outcome);
    ins.text(8, join(m.judged.flags));
    ins.real(9, m.judged.speedup);
    ins.real(10, m.reward);
    ins.real(11, m.cand.created_unix);
    ins.blob(12, encode(m));
    if (sqlite3_step(ins.s) != SQLITE_DONE) {
      std::string msg = sqlite3_errmsg(db_);
      exec("ROLLBACK;");
      return make_error("replay database: storing candidate " + m.cand.id + ": " + msg);
    }
    if (sqlite3_changes(db_) == 1) {
      ++result.inserted;
      fresh.push_back(&m);
    } else {
      ++result.duplicates;
    }
  }
  fail_point("replay.insert");  // a kill here, mid-transaction, must leave the group in flight
  statement grp(db_,
                "INSERT INTO groups (group_id, task, policy_version, created, state) VALUES (?,?,?,?,?) ON "
                "CONFLICT(group_id) DO UPDATE SET policy_version = excluded.policy_version, created = "
                "excluded.created, state = excluded.state WHERE groups.state = 'in_flight'");
  grp.text(1, group.group_id);
  grp.text(2, group.task);
  grp.integer(3, group.policy_version);
  grp.real(4, group.created_unix);
  grp.text(5, group.partial ? "partial" : "pending");
  if (sqlite3_step(grp.s) != SQLITE_DONE) {
    std::string msg = sqlite3_errmsg(db_);
    exec("ROLLBACK;");
    return make_error("replay database: storing group " + group.group_id + ": " + msg);
  }
  if (auto st = exec("COMMIT;"); !st) return st.err();
  candidates_total_ += result.inserted;
  for (const auto* m : fresh) {
    note_attempt(group.task, *m);
    if (!kernels::has_outcome(m->judged, kernels::outcome::pass)) continue;
    best_[group.task] = std::max(best_[group.task], m->judged.speedup);
    by_task_bucket_[group.task][bucket_of(m->judged.speedup)].push_back(
        {m->cand.id, m->cand.program, m->cand.source, m->judged.speedup});
  }
  if (!group.partial) pending_.push_back(group);
  return result;
}

std::string replay_store::group_state(const std::string& group_id) const {
  statement seen(db_, "SELECT state FROM groups WHERE group_id = ?");
  seen.text(1, group_id);
  return seen && sqlite3_step(seen.s) == SQLITE_ROW ? column_text(seen.s, 0) : std::string();
}

expected<int64_t> replay_store::record(const scored_group& group) {
  if (auto state = group_state(group.group_id); !state.empty() && state != "in_flight") return int64_t{0};
  if (auto st = exec("BEGIN IMMEDIATE;"); !st) return st.err();
  auto fail = [&](const std::string& what) -> expected<int64_t> {
    std::string msg = sqlite3_errmsg(db_);
    exec("ROLLBACK;");
    return make_error("replay database: recording " + what + ": " + msg);
  };
  {
    statement grp(db_,
                  "INSERT OR IGNORE INTO groups (group_id, task, policy_version, created, state) VALUES "
                  "(?,?,?,?,'in_flight')");
    grp.text(1, group.group_id);
    grp.text(2, group.task);
    grp.integer(3, group.policy_version);
    grp.real(4, group.created_unix);
    if (sqlite3_step(grp.s) != SQLITE_DONE) return fail("group " + group.group_id);
  }
  statement ins(db_,
                "INSERT INTO candidates (id, group_id, task, content_hash, policy_version, program, outcome, "
                "flags, speedup, reward, created, record, stage) VALUES (?,?,?,?,?,?,'pending','',0,0,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET record = excluded.record, stage = excluded.stage WHERE "
                "candidates.outcome = 'pending'");
  int64_t written = 0;
  for (size_t i = 0; i < group.members.size(); ++i) {
    const auto& m = group.members[i];
    sqlite3_reset(ins.s);
    bind_identity(ins, group, m);
    ins.real(7, m.cand.created_unix);
    ins.blob(8, encode(m));
    ins.text(9, i < group.stages.size() ? group.stages[i] : std::string());
    if (sqlite3_step(ins.s) != SQLITE_DONE) return fail("candidate " + m.cand.id);
    written += sqlite3_changes(db_);
  }
  fail_point("replay.record");  // a kill here, mid-transaction, must leave the database as it was
  if (auto st = exec("COMMIT;"); !st) return st.err();
  return written;
}

expected<std::vector<scored_group>> replay_store::groups_in(const char* state) const {
  std::vector<scored_group> out;
  statement groups(db_,
                   "SELECT group_id, task, policy_version, created FROM groups WHERE state = ? "
                   "ORDER BY created, group_id");
  if (!groups) return make_error(std::string("replay database: ") + sqlite3_errmsg(db_));
  groups.text(1, state);
  while (sqlite3_step(groups.s) == SQLITE_ROW) {
    scored_group g;
    g.group_id = column_text(groups.s, 0);
    g.task = column_text(groups.s, 1);
    g.policy_version = sqlite3_column_int64(groups.s, 2);
    g.created_unix = sqlite3_column_double(groups.s, 3);
    // Generation order: a member's row keeps its rowid when it is recorded again or scored.
    statement members(db_, "SELECT record, stage FROM candidates WHERE group_id = ? ORDER BY rowid");
    members.text(1, g.group_id);
    bool in_flight = std::string(state) == "in_flight";
    while (sqlite3_step(members.s) == SQLITE_ROW)
      if (auto rec = decode_as<scored_candidate>(column_blob(members.s, 0))) {
        g.members.push_back(std::move(*rec));
        if (in_flight) g.stages.push_back(column_text(members.s, 1));
      }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<scored_group> replay_store::in_flight() const {
  auto groups = groups_in("in_flight");
  return groups ? std::move(*groups) : std::vector<scored_group>{};
}

expected<int64_t> replay_store::abandon_in_flight(const std::string& why) {
  int64_t abandoned = 0;
  for (auto& g : in_flight()) {
    for (size_t i = 0; i < g.members.size(); ++i) {
      auto& m = g.members[i];
      if (g.stages[i] == "scored") {
        m.reward = m.judged.reward;
        continue;
      }
      m.judged = kernels::abandoned_verdict(m.cand.id, m.cand.content_hash, g.stages[i]);
      m.judged.evidence.push_back(why);
      m.reward = 0.0;
      ++abandoned;
    }
    g.stages.clear();
    g.partial = true;
    if (auto r = insert(g); !r) return r.err();
  }
  return abandoned;
}

std::vector<exemplar> replay_store::exemplars(const std::string& task, int k) {
  std::vector<exemplar> out;
  auto it = by_task_bucket_.find(task);
  if (it == by_task_bucket_.end() || k <= 0) return out;
  std::vector<int> buckets;
  std::vector<double> means;
  for (const auto& [b, list] : it->second) {
    if (list.empty()) continue;
    double sum = 0;
    for (const auto& e : list) sum += e.speedup;
    buckets.push_back(b);
    means.push_back(sum / static_cast<double>(list.size()));
  }
  while (static_cast<int>(out.size()) < k && !buckets.empty()) {
    double top = *std::max_element(means.begin(), means.end());
    std::vector<double> w;
    for (double m : means) w.push_back(std::exp((m - top) / options_.temperature));
    std::discrete_distribution<size_t> pick(w.begin(), w.end());
    size_t chosen = pick(rng_);
    const auto& list = it->second[buckets[chosen]];
    const auto& e = list[std::uniform_int_distribution<size_t>(0, list.size() - 1)(rng_)];
    out.push_back({e.id, e.program, e.source, e.speedup, buckets[chosen]});
    buckets.erase(buckets.begin() + static_cast<long>(chosen));
    means.erase(means.begin() + static_cast<long>(chosen));
  }
  return out;
}

void replay_store::note_attempt(const std::string& task, const scored_candidate& c) {
  if (options_.refine_turns <= 0) return;
  auto a = attempt_of(c, options_.target);
  if (!a) return;
  auto& list = recent_[task];
  list.push_back(std::move(*a));
  while (static_cast<int64_t>(list.size()) > options_.refine_turns) list.pop_front();
}

std::vector<attempt> replay_store::attempts(const std::string& task) const {
  auto it = recent_.find(task);
  if (it == recent_.end()) return {};
  return std::vector<attempt>(it->second.begin(), it->second.end());
}

group_batch replay_store::take_groups(int64_t learner_version, int n) {
  group_batch batch;
  batch.learner_version = learner_version;
  statement mark(db_, "UPDATE groups SET state = ?, trained_version = ? WHERE group_id = ?");
  auto set_state = [&](const std::string& id, const char* state) {
    sqlite3_reset(mark.s);
    mark.text(1, state);
    mark.integer(2, learner_version);
    mark.text(3, id);
    sqlite3_step(mark.s);
  };
  exec("BEGIN;");
  {
    // What the learner took at an older version, it has trained on: it trains before it moves on.
    statement done(db_, "UPDATE groups SET state = 'trained' WHERE state = 'taken' AND trained_version < ?");
    done.integer(1, learner_version);
    sqlite3_step(done.s);
  }
  while (!pending_.empty() && static_cast<int>(batch.groups.size()) < n) {
    scored_group g = std::move(pending_.front());
    pending_.pop_front();
    if (learner_version - g.policy_version > options_.max_staleness) {
      ++batch.dropped_stale;
      set_state(g.group_id, "stale");
      continue;
    }
    set_state(g.group_id, "taken");
    batch.groups.push_back(std::move(g));
  }
  exec("COMMIT;");
  batch.candidates_total = candidates_total_;
  batch.speedup_best = best_;
  return batch;
}

expected<std::vector<scored_candidate>> replay_store::read_scored(const std::string& path,
                                                                  const std::string& outcome) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error("cannot open replay database '" + path + "': " + msg);
  }
  std::vector<scored_candidate> out;
  {
    statement rows(db, outcome.empty()
                           ? "SELECT record FROM candidates WHERE outcome != 'pending' ORDER BY created, id"
                           : "SELECT record FROM candidates WHERE outcome = ?1 ORDER BY created, id");
    if (!rows) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_close(db);
      return make_error("'" + path + "' is not a replay database: " + msg);
    }
    if (!outcome.empty()) rows.text(1, outcome);
    while (sqlite3_step(rows.s) == SQLITE_ROW)
      if (auto rec = decode_as<scored_candidate>(column_blob(rows.s, 0))) out.push_back(std::move(*rec));
  }
  sqlite3_close(db);
  return out;
}

expected<replay_glance> replay_store::glance(const std::string& path, int64_t hacks) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error("cannot open replay database '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db, 2000);  // the run writes meanwhile
  replay_glance out;
  {
    statement outcomes(db, "SELECT outcome, COUNT(*) FROM candidates GROUP BY outcome");
    statement best(
        db,
        "SELECT c.task, c.record FROM candidates c JOIN (SELECT task, MAX(speedup) AS s FROM candidates "
        "WHERE outcome = 'pass' GROUP BY task) b ON c.task = b.task AND c.speedup = b.s "
        "WHERE c.outcome = 'pass' ORDER BY c.task, c.created, c.id");
    statement recent(
        db, "SELECT record FROM candidates WHERE outcome = 'hack' ORDER BY created DESC, id DESC LIMIT ?1");
    if (!outcomes || !best || !recent) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_close(db);
      return make_error("'" + path + "' is not a replay database: " + msg);
    }
    while (sqlite3_step(outcomes.s) == SQLITE_ROW)
      out.outcomes[column_text(outcomes.s, 0)] = sqlite3_column_int64(outcomes.s, 1);
    while (sqlite3_step(best.s) == SQLITE_ROW) {
      if (!out.best.empty() && out.best.back().cand.task == column_text(best.s, 0)) continue;
      if (auto rec = decode_as<scored_candidate>(column_blob(best.s, 1))) out.best.push_back(std::move(*rec));
    }
    recent.integer(1, hacks);
    while (sqlite3_step(recent.s) == SQLITE_ROW)
      if (auto rec = decode_as<scored_candidate>(column_blob(recent.s, 0)))
        out.recent_hacks.push_back(std::move(*rec));
  }
  sqlite3_close(db);
  return out;
}

expected<replay_summary> replay_store::summarize(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error("cannot open replay database '" + path + "': " + msg);
  }
  replay_summary out;
  {
    statement groups(
        db,
        "SELECT g.group_id, g.task, g.state, g.policy_version, g.created, AVG(c.reward), COUNT(c.id) "
        "FROM groups g JOIN candidates c ON c.group_id = g.group_id GROUP BY g.group_id "
        "ORDER BY g.created, g.group_id");
    statement outcomes(db, "SELECT outcome, COUNT(*) FROM candidates GROUP BY outcome");
    statement best(db, "SELECT task, MAX(speedup) FROM candidates WHERE outcome = 'pass' GROUP BY task");
    if (!groups || !outcomes || !best) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_close(db);
      return make_error("'" + path + "' is not a replay database: " + msg);
    }
    while (sqlite3_step(groups.s) == SQLITE_ROW)
      out.groups.push_back({column_text(groups.s, 0), column_text(groups.s, 1), column_text(groups.s, 2),
                            sqlite3_column_int64(groups.s, 3), sqlite3_column_double(groups.s, 4),
                            sqlite3_column_double(groups.s, 5), sqlite3_column_int64(groups.s, 6)});
    while (sqlite3_step(outcomes.s) == SQLITE_ROW) {
      out.outcomes[column_text(outcomes.s, 0)] = sqlite3_column_int64(outcomes.s, 1);
      out.candidates += sqlite3_column_int64(outcomes.s, 1);
    }
    while (sqlite3_step(best.s) == SQLITE_ROW)
      out.speedup_best[column_text(best.s, 0)] = sqlite3_column_double(best.s, 1);
    // The best candidate's figure against the CUDA-graph baseline (0 on the CPU target).
    statement best_rec(db,
                       "SELECT task, record FROM candidates c WHERE outcome = 'pass' AND speedup = "
                       "(SELECT MAX(speedup) FROM candidates WHERE task = c.task AND outcome = 'pass')");
    while (best_rec && sqlite3_step(best_rec.s) == SQLITE_ROW)
      if (auto rec = decode_as<scored_candidate>(column_blob(best_rec.s, 1)))
        out.speedup_best_vs_graph[column_text(best_rec.s, 0)] = rec->bench.speedup_vs_graph;
    // What convicted the hacks, and what the judge found on the outliers it reviewed (passes it upheld or
    // left inconclusive, hacks it convicted).
    statement judged(db, "SELECT record FROM candidates WHERE outcome IN ('pass', 'hack')");
    while (judged && sqlite3_step(judged.s) == SQLITE_ROW) {
      auto rec = decode_as<scored_candidate>(column_blob(judged.s, 0));
      if (!rec) continue;
      if (!rec->judged.review.finding.empty()) ++out.reviews[rec->judged.review.finding];
      if (rec->judged.outcome == "hack")
        for (const auto& f : rec->judged.flags) ++out.hack_flags[f];
    }
  }
  sqlite3_close(db);
  return out;
}

}  // namespace crucible::runtime
