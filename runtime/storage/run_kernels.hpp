#pragma once
// The kernels a run made, at hand (`crucible show`, `crucible export`): read-only from its replay
// database — or, for a run of CUDA-L1's stages, from each stage's —, a candidate by id, a task's candidates,
// each task's best verified kernel; printed with its program, measurements and verdict, or written as a
// source file beside a JSON sidecar.
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "messages/scored.hpp"

namespace crucible::runtime {

/// The replay databases of a run directory: RUN_DIR/replay.sqlite, or each stage's of a staged run (the sft
/// stage's corpus first, then self_supervised, contrastive). An error when it holds none.
expected<std::vector<std::string>> run_databases(const std::string& run_dir);

/// Every stored candidate of the run (not those in flight), database by database, in creation order.
expected<std::vector<scored_candidate>> run_candidates(const std::string& run_dir);

/// Per task, its best verified candidate: outcome pass, the highest speedup vs eager, the earliest on a tie;
/// in task-name order. Tasks with none passing are left out.
std::vector<scored_candidate> best_per_task(const std::vector<scored_candidate>& all);

/// A candidate as `crucible show` prints it: its ids and origin, the evaluation as `crucible eval` prints it,
/// the judge's review, the worker's notes, the program and the source.
std::string format_candidate(const scored_candidate& c);

/// The sidecar of an exported kernel: `crucible eval --json`'s object plus the candidate's origin (group,
/// policy version, program, reward, the judge's review). No source: it is the file beside.
std::string candidate_sidecar(const scored_candidate& c);

/// The file name of a task's kernel: the task name (characters other than letters, digits, '.', '_' and '-'
/// as '_') with the language's extension (.cpp, .cu, .py).
std::string kernel_file_name(const scored_candidate& c);

/// Writes each task's best verified kernel into `out_dir` (created if missing) as kernel_file_name() beside
/// the same name with .json; returns the candidates written.
expected<std::vector<scored_candidate>> export_best(const std::string& run_dir, const std::string& out_dir);

}  // namespace crucible::runtime
