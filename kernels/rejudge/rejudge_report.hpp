#pragma once
// What `crucible rejudge` found, kernel by kernel and in sum: claimed against measured speedups, verdicts and
// the hack classes that convicted, as JSON and as Markdown. The figures over tasks come from
// speedup_metrics, as `crucible report`'s do.
#include <map>
#include <string>
#include <vector>

#include "kernels/eval/speedup_metrics.hpp"
#include "kernels/rejudge/published_kernels.hpp"

namespace crucible::kernels {

/// Why a kernel has no verdict: the publication has no candidate for its task, or its problem does not load.
enum class rejudge_status { judged, no_candidate, problem_error };
const char* wire_name(rejudge_status s);

struct rejudged_kernel {
  int level = 0, id = 0;
  std::string name, origin;
  std::vector<std::pair<std::string, double>> claimed;
  double claimed_vs_eager = 0;
  rejudge_status status = rejudge_status::judged;
  std::string outcome;  ///< the verdict's outcome (judged), else the status's name
  double speedup = 0;   ///< measured against eager; 0 unless the verdict is pass
  double speedup_vs_graph = 0;
  double speedup_vs_compile = 0, speedup_vs_compile_ro = 0;  ///< torch.compile, default / reduce-overhead
  double eager_ms = 0, candidate_ms = 0;
  double graph_ms = 0, compile_ms = 0, compile_ro_ms = 0;  ///< the other baselines' medians (0: not timed)
  std::vector<std::string> flags;                          ///< what convicted a hack
  std::vector<code_feature> features;
  std::string error;               ///< the problem's or the evaluation's error, first line
  double peak_fraction = 0;        ///< the roofline's share the candidate reached (0 when not timed)
  double seconds = 0;              ///< the evaluation's wall time, worker start and builds included
  std::vector<std::string> notes;  ///< the evaluation's notes (phases, baselines, why a verdict): JSON only
};

struct rejudge_summary {
  size_t kernels = 0, with_candidate = 0, judged = 0;
  std::map<std::string, size_t> outcomes;    ///< kernels by outcome (and by status where not judged)
  std::map<std::string, size_t> hack_flags;  ///< kernels convicted by each flag
  std::map<std::string, size_t> features;    ///< kernels whose code has each feature
  speedup_summary claimed;                   ///< the claims against eager, one per kernel
  speedup_summary verified;                  ///< the measured speedups of kernels that pass
  /// The same against the other baselines, over the kernels where each was timed (tasks: 0 where none).
  speedup_summary verified_vs_graph, verified_vs_compile, verified_vs_compile_ro;
  size_t claimed_wins = 0;    ///< claimed faster than eager
  size_t surviving_wins = 0;  ///< of those: pass, and measured faster than eager
  /// Each problem's Model as its own candidate (A/A): over the kernels that pass, the mean and largest
  /// |speedup - 1| and the speedups' sample standard deviation.
  double aa_mean_abs = 0, aa_max_abs = 0, aa_sd = 0;
  /// Wall time per kernel that had a candidate (problem read, worker, protocol, baselines): the sum, the
  /// median and evaluations per minute of it (0 where none was timed).
  double seconds_total = 0, seconds_median = 0, per_minute = 0;
};

rejudge_summary summarize_rejudged(const std::vector<rejudged_kernel>& rows);

struct rejudge_header {
  std::string source;       ///< what was re-judged: a file, a folder, or a checkout (A/A)
  std::string target;       ///< cpu | cuda
  std::string device;       ///< the machine, in words
  bool self_check = false;  ///< an A/A run
  size_t planned = 0;       ///< kernels to judge; more than the rows while the run is under way (0: as many)
};

/// The kernels of a report rejudge_json() wrote (a finished or a partial one), for a run that goes on where
/// it stopped; an error when the text is not such a report or `h` is another run's (source, target, device
/// or A/A differ), saying which.
expected<std::vector<rejudged_kernel>> read_rejudged_kernels(const std::string& json_text,
                                                             const rejudge_header& h);

/// The rows of a resumed run's report: every kept kernel (those of problems outside this run's list too)
/// and every one judged so far, one per problem in (level, id) order; a judged kernel replaces the kept one
/// of its problem. Written after each kernel, so a run cut short loses none of what it went on from.
std::vector<rejudged_kernel> resumed_rows(const std::vector<rejudged_kernel>& kept,
                                          const std::vector<rejudged_kernel>& judged);

std::string rejudge_json(const rejudge_header& h, const std::vector<rejudged_kernel>& rows,
                         const rejudge_summary& s);
std::string rejudge_markdown(const rejudge_header& h, const std::vector<rejudged_kernel>& rows,
                             const rejudge_summary& s);

}  // namespace crucible::kernels
