#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "runtime/storage/run_kernels.hpp"

namespace crucible::cli {

int export_command(const export_args& args) {
  auto written = runtime::export_best(args.run_dir, args.out_dir);
  if (!written) {
    std::cerr << "crucible export: " << written.message() << "\n";
    return 2;
  }
  for (const auto& c : *written)
    std::printf("%-32s %8.3fx  %s/%s\n", c.cand.task.c_str(), c.judged.speedup, args.out_dir.c_str(),
                runtime::kernel_file_name(c).c_str());
  std::printf("%zu kernels written to %s (each with a .json sidecar)\n", written->size(),
              args.out_dir.c_str());
  return 0;
}

}  // namespace crucible::cli
