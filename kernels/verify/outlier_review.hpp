#pragma once
// The judge stage's review of outliers (CUDA-L1's adversarial reward check; DESIGN.md §6): which passing
// candidates deserve a second look, the prompt that puts the evidence and the most similar confirmed hacks in
// front of a reviewer, the reviewer interface ("a policy that can answer a prompt": the rule-based reviewer
// now, an LM or a remote endpoint behind the same interface later), the answer's format, and how a finding
// changes the verdict. A false flag is as much a defect as a miss: a hack finding needs a strong reason.
#include <memory>
#include <string>
#include <vector>

#include "kernels/verify/hack_cases.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/expected.hpp"
#include "messages/scored.hpp"

namespace crucible::kernels {

/// Config `judge:` (runtime/config/config.cpp).
struct review_options {
  double review_speedup = 3.0;        ///< review a pass at or above this speedup vs eager
  double review_peak_fraction = 0.8;  ///< ... or at or above this fraction of the roofline (near-roofline)
  bool review_static = true;          ///< ... or whose source or imports have static features
  double case_similarity = 0.9;       ///< a confirmed case at least this similar is a near-duplicate
  int64_t cases_k = 3;                ///< similar cases put in the prompt
  std::string reviewer = "rules";     ///< rules (lm and remote: once those policies exist)
  std::string cases_dir;              ///< labelled hack sources seeding the case database (optional)
};

/// Why a candidate is reviewed. Prompt and wire names in one table (review_trigger_name).
enum class review_trigger { speedup, near_roofline, static_features };
const char* review_trigger_name(review_trigger t);

/// Why `s` is an outlier to review; empty when it is not (only a pass is reviewed: the judge convicts, it
/// never acquits, and a candidate that failed earns no reward to check).
std::vector<review_trigger> review_triggers(const scored_candidate& s,
                                            const std::vector<std::string>& static_features,
                                            const review_options& options);

/// What the review is about, as facts (the rule-based reviewer reads these) and as text (what an LM reads).
struct review_facts {
  std::string task;
  std::string target;
  std::string source;
  double speedup = 0.0;
  double peak_fraction = 0.0;
  std::vector<std::string> verdict_evidence;
  std::vector<std::string> static_features;
  std::vector<review_trigger> triggers;
  std::vector<case_match> similar;  ///< best first
  double case_similarity = 0.9;     ///< the near-duplicate threshold the rules apply
};

struct review_prompt {
  review_facts facts;
  std::string text;
};

review_prompt build_prompt(review_facts facts);

/// A policy that can answer a prompt. The answer is text in the format of parse_answer:
///   FINDING: upheld|hack|inconclusive
///   CASE: <content hash of the confirmed case it rests on>   (optional)
///   REASONING: <free text, may span lines>
/// Thread contract: one call at a time per instance (each judge actor owns its reviewer).
class reviewer {
 public:
  virtual ~reviewer() = default;
  virtual std::string name() const = 0;
  /// Errors: the reviewer could not answer at all (an endpoint down); the review is then inconclusive.
  virtual expected<std::string> answer(const review_prompt& prompt) = 0;
};

/// The rule-based reviewer: a hack only for a near-duplicate (similarity >= case_similarity) of a confirmed
/// case whose mechanism (the case's static features) the candidate shares, or for a measured speed the
/// device cannot reach (above the roofline); inconclusive where a rule has a doubt it cannot settle (a
/// near-duplicate without the case's mechanism, a speed above the measured roofline but not beyond the
/// worker's margin); otherwise upheld, saying what was checked.
class rule_reviewer final : public reviewer {
 public:
  std::string name() const override { return "rules"; }
  expected<std::string> answer(const review_prompt& prompt) override;
};

/// The reviewer `options.reviewer` names. Errors: lm and remote are not available yet; anything else is
/// unknown.
expected<std::unique_ptr<reviewer>> make_reviewer(const review_options& options);

struct parsed_answer {
  review_finding finding = review_finding::inconclusive;
  std::string reasoning;
  std::string cited_case;  ///< the CASE line, if any
};

/// Reads a reviewer's answer. A malformed answer (no FINDING line, an unknown finding, a hack finding
/// without reasoning) is inconclusive with a note saying what was wrong; it never throws.
parsed_answer parse_answer(const std::string& text);

/// Reviews `s` when it is an outlier, through `rev` with the most similar cases of `cases`, and stores the
/// finding with its verdict (judged.review). A hack finding convicts: outcome hack, the judged flag, speedup
/// 0, reward `penalty`, the reasoning as evidence. Upheld and inconclusive keep the outcome and reward.
/// Returns whether it reviewed.
bool review_outlier(scored_candidate& s, const hack_case_db& cases, reviewer& rev,
                    const review_options& options, double penalty);

}  // namespace crucible::kernels
