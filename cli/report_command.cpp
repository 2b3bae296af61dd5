#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "actors/stages/sft_stage.hpp"
#include "actors/stages/stage_report.hpp"
#include "cli/commands.hpp"
#include "runtime/dashboard/html_report.hpp"
#include "runtime/pipeline/training_stages.hpp"
#include "runtime/storage/run_report.hpp"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;

int report_one(const std::string& dir) {
  auto r = runtime::make_run_report(dir);
  if (!r) {
    std::cerr << "crucible report: " << r.message() << "\n";
    return 2;
  }
  std::cout << runtime::format_run_report(*r);
  return 0;
}

// A run of CUDA-L1's stages: each stage's own run (the sft stage's corpus run), and the language-model
// stages' figures.
int report_stages(const std::string& dir) {
  using runtime::training_stage;
  const std::string sft = runtime::stage_dir(dir, training_stage::sft);
  int rc = 0;
  bool any = false;
  for (auto s : {training_stage::sft, training_stage::self_supervised, training_stage::contrastive}) {
    const std::string sd = runtime::stage_dir(dir, s);
    const std::string run = s == training_stage::sft ? sd + "/corpus" : sd;
    if (!fs::exists(run + "/replay.sqlite")) continue;
    any = true;
    std::cout << "== stage " << runtime::wire_name(s)
              << (s == training_stage::sft ? " (its corpus: the program policy's run)" : "") << "\n";
    rc = std::max(rc, report_one(run));
    if (s != training_stage::sft)
      if (auto fig = actors::measure_stage(runtime::wire_name(s), run + "/replay.sqlite",
                                           actors::sft_source_hashes(sft)))
        std::cout << actors::format_stage_report(*fig);
    std::cout << "\n";
  }
  if (!any) {
    std::cerr << "crucible report: " << dir << " holds no stage's run yet\n";
    return 2;
  }
  return rc;
}

}  // namespace

int report_command(const report_args& args) {
  if (!args.html.empty()) {
    auto html = runtime::html_report(args.run_dir);
    if (!html) {
      std::cerr << "crucible report: " << html.message() << "\n";
      return 2;
    }
    std::ofstream out(args.html, std::ios::trunc);
    out << *html;
    if (!out.flush()) {
      std::cerr << "crucible report: cannot write " << args.html << "\n";
      return 1;
    }
    std::cout << "wrote " << args.html << " (" << html->size() / 1024 << " KiB, self-contained)\n";
    return 0;
  }
  if (args.json || args.csv) {  // one run's figures: a stage's run for a run of stages
    if (args.csv) {
      auto csv = runtime::metrics_csv(args.run_dir);
      if (!csv) {
        std::cerr << "crucible report: " << csv.message() << "\n";
        return 2;
      }
      std::cout << *csv;
      return 0;
    }
    auto r = runtime::make_run_report(args.run_dir);
    if (!r) {
      std::cerr << "crucible report: " << r.message()
                << (fs::exists(fs::path(args.run_dir) / "stages")
                        ? " (for a run of stages, name a stage's run: "
                          "RUN_DIR/stages/contrastive)"
                        : "")
                << "\n";
      return 2;
    }
    std::cout << runtime::run_report_json(*r) << "\n";
    return 0;
  }
  if (fs::exists(fs::path(args.run_dir) / "stages") && !fs::exists(fs::path(args.run_dir) / "replay.sqlite"))
    return report_stages(args.run_dir);
  return report_one(args.run_dir);
}

}  // namespace crucible::cli
