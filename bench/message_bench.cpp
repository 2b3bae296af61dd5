// Message costs: msgpack encode + decode of every message type at realistic sizes, and an in-process CAF
// request/response round trip carrying a candidate. Prints a table; numbers are per message, medians of
// repeated batches on this machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "tests/messages/sample_messages.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using namespace crucible;

// Median over `batches` of the mean time per call of `fn`, in microseconds.
double per_call_us(const std::function<void()>& fn, int calls, int batches = 7) {
  std::vector<double> means;
  for (int b = 0; b < batches; ++b) {
    auto t0 = clock_type::now();
    for (int i = 0; i < calls; ++i) fn();
    means.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / calls);
  }
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

template <class T>
void row(const char* label, const T& msg, int calls) {
  std::string bytes = encode(msg);
  size_t sink = 0;
  double enc = per_call_us([&] { sink += encode(msg).size(); }, calls);
  double dec = per_call_us([&] { sink += decode_as<T>(bytes).has_value(); }, calls);
  std::printf("| %-26s | %10zu | %10.2f | %10.2f | %10.2f |\n", label, bytes.size(), enc, dec, enc + dec);
  if (sink == 0) std::printf("(unreachable)\n");
}

// A candidate as the generator makes it: ~4 KB of emitted source, ~80 program tokens.
candidate realistic_candidate() {
  candidate c = test::sample_candidate();
  c.source.assign(4096, 'x');
  c.tokens.assign(80, 7);
  c.logprobs.assign(80, -0.7f);
  c.context.assign(120, 3);
  return c;
}

caf::behavior echo(caf::event_based_actor*) {
  return {[](stage_atom, const candidate& c) { return c.id; }};
}

}  // namespace

int main() {
  std::printf("msgpack encode/decode per message (microseconds, median of 7 batches)\n\n");
  std::printf("| %-26s | %10s | %10s | %10s | %10s |\n", "message", "bytes", "encode", "decode",
              "round trip");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(12, '-').c_str(),
              std::string(12, '-').c_str(), std::string(12, '-').c_str(), std::string(12, '-').c_str());
  row("task", test::sample_task(), 20000);
  row("prompt (2 exemplars)", test::sample_prompt(), 10000);
  row("candidate (4 KB source)", realistic_candidate(), 10000);
  row("compile_result", test::sample_compile(), 20000);
  row("eval_request", test::sample_eval_request(), 20000);
  row("bench_result", test::sample_bench(), 20000);
  row("verdict", test::sample_verdict(), 20000);
  scored_group group = test::sample_group();
  for (auto& m : group.members) m.cand = realistic_candidate();
  group.members.resize(8, group.members.front());
  row("scored_group (G=8)", group, 1000);
  row("group_batch (2 groups)", group_batch{3, {group, group}, 0, 100, {}}, 500);
  weights_update w = test::sample_weights();
  w.bytes.assign(400 * 1024, 'w');
  row("weights_update (400 KB)", w, 200);
  row("control", test::sample_control(), 20000);
  row("status_report", test::sample_status(), 20000);

  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto target = sys.spawn(echo);
  caf::scoped_actor self{sys};
  candidate c = realistic_candidate();
  auto one = [&] {
    self->request(target, caf::infinite, stage_atom::value, c)
        .receive([](const std::string&) {}, [](caf::error&) {});
  };
  for (int i = 0; i < 1000; ++i) one();
  double rt = per_call_us(one, 5000);
  std::printf(
      "\nin-process CAF request/response carrying a candidate (scoped actor <-> event-based actor): "
      "%.2f us per round trip, %.0f round trips/s\n",
      rt, 1e6 / rt);
  return 0;
}
