#include <iostream>

#include "cli/commands.hpp"
#include "runtime/storage/run_report.hpp"

namespace crucible::cli {

int report_command(const report_args& args) {
  auto r = runtime::make_run_report(args.run_dir);
  if (!r) {
    std::cerr << "crucible report: " << r.message() << "\n";
    return 2;
  }
  std::cout << runtime::format_run_report(*r);
  return 0;
}

}  // namespace crucible::cli
