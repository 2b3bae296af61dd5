#pragma once
// The judge stage's case database: confirmed hacks, retrieved by similarity to a candidate under review.
// A case joins it only on firm ground: a verdict of the verifier that rests on dynamic evidence (never one
// the judge itself convicted, which would feed on its own findings), or a labelled source from a corpus
// directory given in config. Cases persist as JSON lines in a file (the run directory's hack_cases.jsonl),
// so a resumed run keeps what the run learned.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/verify/source_similarity.hpp"
#include "messages/expected.hpp"
#include "messages/scored.hpp"

namespace crucible::kernels {

struct hack_case {
  std::string id;  ///< the source's content hash
  std::string task;
  std::string target;  ///< cpu | cuda
  std::string cls;     ///< the hack's class: the verdict's flags ("input_mutated"), or a corpus label's class
  std::vector<std::string> evidence;  ///< what confirmed it (dynamic evidence tags, or the corpus file)
  std::string origin;                 ///< verifier (a verdict of this run) | corpus (a labelled file)
  std::string source;
  /// Static features seen when it was confirmed that the source alone does not show (its artifact's
  /// imports: a thread started through a macro-built name still imports pthread_create).
  std::vector<std::string> mechanism;
  // Derived on load, never stored:
  source_fingerprint print;
  /// The hack's mechanism: static_source_flags of the source and `mechanism`, sorted, unique.
  std::vector<std::string> static_features;
};

/// The static features of a candidate: static_source_flags of its source, and the flags of its artifact's
/// suspicious imports when the artifact is readable here. Sorted, unique.
std::vector<std::string> candidate_static_features(const scored_candidate& s);

/// A case retrieved for a candidate, with its similarity in [0, 1].
struct case_match {
  hack_case c;
  double similarity = 0.0;
};

/// The case a scored candidate becomes, if any: a hack verdict with at least one flag that is a dynamic
/// evidence kind (verdict_vocabulary.hpp). A verdict convicted only by static rules or by the judge is none.
/// Its mechanism includes the artifact's imports when the artifact is readable here.
std::optional<hack_case> case_from_verdict(const scored_candidate& s);

/// A labelled corpus file's case: its first line is "// corpus: label=hack class=C task=T [target=cpu]".
/// Errors: no such header, a label other than hack, a header without class or task.
expected<hack_case> case_from_corpus_file(const std::string& path);

/// Thread contract: every member is safe to call from several threads (several judge actors of one process
/// share one database).
class hack_case_db {
 public:
  /// Opens (creating if needed) the case file at `path` and loads it; an empty path keeps cases in memory
  /// only. Lines that do not parse are skipped and counted (skipped_lines), never fatal: one bad line must
  /// not cost the rest. Errors: a file that cannot be read or created.
  static expected<std::shared_ptr<hack_case_db>> open(const std::string& path);

  /// Adds every labelled hack of `dir` (recursively; files ending .cpp, .cu, .cc, .cxx). Files without a hack
  /// header are skipped. Returns the number of cases added. Errors: `dir` is not a directory.
  expected<int64_t> seed_from_dir(const std::string& dir);

  /// Adds a case unless one with its id exists; persists it. False when it was known already.
  bool add(hack_case c);

  /// The k cases most similar to `source`, best first; a case of `task` ranks before another of equal
  /// similarity (within same_task_bonus). Cases of another target are skipped.
  std::vector<case_match> nearest(const std::string& source, const std::string& task,
                                  const std::string& target, size_t k) const;

  size_t size() const;
  int64_t skipped_lines() const { return skipped_lines_; }
  const std::string& path() const { return path_; }

  /// How much closer a case of the candidate's own task ranks (its similarity is reported unchanged).
  static constexpr double same_task_bonus = 0.05;

 private:
  explicit hack_case_db(std::string path) : path_(std::move(path)) {}
  bool add_locked(hack_case c, bool persist);

  std::string path_;
  mutable std::mutex mu_;
  std::vector<hack_case> cases_;
  int64_t skipped_lines_ = 0;
};

}  // namespace crucible::kernels
