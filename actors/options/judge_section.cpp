#include "actors/options/judge_section.hpp"

#include <algorithm>
#include <filesystem>

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(judge_section& s) {
  return {
      {"review_speedup", &s.review_speedup},
      {"review_peak_fraction", &s.review_peak_fraction},
      {"review_static", &s.review_static},
      {"case_similarity", &s.case_similarity},
      {"cases_k", &s.cases_k},
      {"reviewer", &s.reviewer},
      {"cases_dir", &s.cases_dir},
  };
}

status validate(const judge_section& j, const runtime::config& c) {
  if (!(j.review_speedup >= 0))
    return make_error("judge.review_speedup: expected >= 0 (0 reviews every pass)");
  if (!(j.review_peak_fraction >= 0))
    return make_error("judge.review_peak_fraction: expected >= 0 (a fraction of the roofline, e.g. 0.8)");
  if (!(j.case_similarity > 0 && j.case_similarity <= 1))
    return make_error("judge.case_similarity: expected a similarity in (0, 1]");
  if (j.cases_k < 1) return make_error("judge.cases_k: expected >= 1");
  if (auto r = kernels::make_reviewer(j); !r) return r.err();
  bool in_pipeline = std::find(c.pipeline.begin(), c.pipeline.end(), "judge") != c.pipeline.end();
  std::error_code ec;
  if (in_pipeline && !j.cases_dir.empty() && !std::filesystem::is_directory(j.cases_dir, ec))
    return make_error("judge.cases_dir: '" + j.cases_dir + "' is not a directory");
  return {};
}

const bool registered = runtime::register_section<judge_section>({fields, validate});

}  // namespace
}  // namespace crucible::actors
