#include "kernels/eval_worker/process_probe.hpp"

#include <dirent.h>
#include <sys/resource.h>

namespace crucible::kernels {

int thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (auto* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

long involuntary_switches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nivcsw;
}

}  // namespace crucible::kernels
