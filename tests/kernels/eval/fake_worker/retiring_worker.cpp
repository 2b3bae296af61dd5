// A stand-in for crucible-eval-worker that speaks its protocol and fails on purpose, for the worker client
// and bench runner tests: the first process started with a given marker file answers its first request
// with an error and worker_retired, then exits, as a CUDA worker does after LibTorch ran out of memory
// inside it; any later process answers every request with a plain success.
// The marker file is named by CRUCIBLE_FAKE_WORKER_MARKER; fds 3 and 4 are the protocol's, as for the real
// worker (its arguments are accepted and ignored).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kernels/eval/frame_io.hpp"
#include "messages/envelope.hpp"

int main() {
  const char* env = std::getenv("CRUCIBLE_FAKE_WORKER_MARKER");
  if (!env || !*env) return 2;
  const std::string marker = env;
  const bool first = !std::ifstream(marker).good();
  if (first) std::ofstream(marker) << getpid() << "\n";
  auto reply = [](const crucible::bench_result& r) {
    return static_cast<bool>(crucible::kernels::write_frame(4, crucible::encode(r, "eval_worker")));
  };
  crucible::bench_result ready;
  ready.status = "ready";
  ready.worker = "fake:" + std::to_string(getpid());
  if (!reply(ready)) return 4;
  for (;;) {
    auto frame = crucible::kernels::read_frame(3);
    if (frame.status != crucible::kernels::frame_status::ok) return 0;
    auto request = crucible::decode_as<crucible::eval_request>(frame.payload);
    crucible::bench_result r;
    r.candidate_id = request ? request->candidate_id : "";
    r.task = request ? request->task.name : "";
    r.worker = "fake:" + std::to_string(getpid());
    if (first) {
      r.status = "error";
      r.error = "evaluation failed: CUDA out of memory (worker retired)";
      r.worker_retired = true;
      reply(r);
      std::_Exit(5);
    }
    r.status = "ok";
    r.correct = true;
    if (!reply(r)) return 4;
  }
}
