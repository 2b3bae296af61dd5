#pragma once
// `crucible report RUN_DIR --html`: one self-contained HTML file — the charts library, the page's script and
// the run's data inlined, nothing fetched — with the dashboard's charts (runtime/dashboard/web/charts.js):
// reward and correct-rate curves, throughput, speedup per task against eager and the CUDA graph, and the
// report's tables (outcomes, hack flags, speedup summaries).
#include <string>

#include "messages/expected.hpp"

namespace crucible::runtime {

/// The HTML report of the run in `run_dir`. Errors: what make_run_report says, or a metrics line that is
/// not a JSON object.
expected<std::string> html_report(const std::string& run_dir);

}  // namespace crucible::runtime
