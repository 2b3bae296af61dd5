// The program policy's costs at the default size: sampling a GRPO group (n = 8) and one GRPO update on two
// groups, on suite tasks, at 1 and at all intra-op threads. Prints a table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/program/program_space.hpp"
#include "kernels/task/task_loader.hpp"
#include "policies/grpo_trainer.hpp"
#include "policies/program_policy.hpp"

namespace {

using namespace crucible;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

prompt make_prompt(const task_spec& t, std::mt19937_64& rng) {
  prompt p;
  p.group_id = "bench";
  p.task = t;
  p.group_size = 8;
  for (int i = 0; i < 2; ++i) {
    exemplar e;
    e.program = kernels::to_text(kernels::random_program(t, rng));
    e.bucket = 2 * i + 1;
    e.speedup = 0.5 + i;
    p.exemplars.push_back(e);
  }
  return p;
}

}  // namespace

int main() {
  auto suite = kernels::load_task_suite(kernels::default_task_dir(), "cpu");
  if (!suite) {
    std::fprintf(stderr, "%s\n", suite.message().c_str());
    return 1;
  }
  std::map<std::string, task_spec> tasks;
  for (const auto& t : *suite) tasks[t.name] = t;
  std::vector<std::string> names = {"bias_gelu", "softmax_scaled", "gemm_bias_scale_row_sum"};
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  policies::policy_config cfg;
  std::printf("program policy: d_model %d, layers %d, heads %d\n\n", cfg.d_model, cfg.layers, cfg.heads);
  std::printf("| %-26s | %7s | %16s | %18s |\n", "task", "threads", "samples/s (n=8)",
              "GRPO step (2 groups)");
  std::printf("|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(9, '-').c_str(),
              std::string(18, '-').c_str(), std::string(20, '-').c_str());
  for (int threads : {1, cores}) {
    policies::set_intra_op_threads(threads);
    for (const auto& name : names) {
      if (!tasks.count(name)) continue;
      std::mt19937_64 rng(1);
      policies::program_policy policy(cfg, 1);
      policies::grpo_trainer trainer(policy, {}, 2);
      prompt p = make_prompt(tasks[name], rng);
      policy.sample(p, 8, 1.0, 0);  // warm-up
      const int rounds = 10;
      std::vector<scored_group> groups;
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < rounds; ++r) {
        auto s = policy.sample(p, 8, 1.0, static_cast<uint64_t>(r));
        if (!s) {
          std::fprintf(stderr, "%s\n", s.message().c_str());
          return 1;
        }
        if (groups.size() < 2) {
          scored_group g;
          g.group_id = "g" + std::to_string(r);
          g.task = name;
          for (size_t i = 0; i < s->size(); ++i) {
            scored_candidate c;
            c.cand.id = g.group_id + "-" + std::to_string(i);
            c.cand.task = name;
            c.cand.tokens = (*s)[i].tokens;
            c.cand.logprobs = (*s)[i].logprobs;
            c.cand.context = (*s)[i].context;
            c.reward = static_cast<double>(i % 3);
            g.members.push_back(c);
          }
          groups.push_back(g);
        }
      }
      double rate = 8.0 * rounds / seconds_since(t0);
      trainer.step(groups, tasks);  // warm-up
      t0 = std::chrono::steady_clock::now();
      const int steps = 5;
      for (int i = 0; i < steps; ++i) trainer.step(groups, tasks);
      double step_ms = 1e3 * seconds_since(t0) / steps;
      std::printf("| %-26s | %7d | %16.1f | %15.1f ms |\n", name.c_str(), threads, rate, step_ms);
    }
  }
  return 0;
}
