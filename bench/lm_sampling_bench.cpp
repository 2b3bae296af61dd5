// Sampling throughput of the decoder LM (issue 13): new tokens/s of sample_completions at several batch sizes
// for the embedded model of the GPU config (~36M parameters) and a random model of Qwen2.5-0.5B's shape, the
// prompt prefilled once, every completion run to --new tokens (no stop), temperature 1, no top-k/top-p, and
// the CUDA caching allocator's peak. On CUDA each batch is run twice, side by side: eager decoding and the
// CUDA-graph'd step (captured in the warm-up, once per batch and capacity). Weights are random: the figure
// is the runtime's, not a model's.
// bench/lm_training_bench measures sampling and training side by side.
//
//   build/bench/lm_sampling_bench [--device cpu|cuda] [--dtype f32|bf16|f16] [--shapes embedded,qwen0.5b]
//                                 [--batches 1,8,64] [--prompt N] [--new N]
#include <cstdio>
#include <string>

#include "bench/lm_bench_common.hpp"

using namespace crucible;
using namespace crucible::bench;

int main(int argc, char** argv) {
  const auto a = parse_lm_bench_args(
      argc, argv,
      "lm_sampling_bench [--device cpu|cuda] [--dtype f32|bf16|f16] [--shapes embedded,qwen0.5b] "
      "[--batches 1,8,64] [--prompt N] [--new N]");
  std::printf("device %s, dtype %s, prompt %lld tokens, %lld new tokens per completion\n\n", a.device.c_str(),
              a.dtype.c_str(), static_cast<long long>(a.prompt), static_cast<long long>(a.new_tokens));
  const bool graphs = a.cuda();
  std::printf(
      graphs ? "| model | parameters | batch | eager s | eager new tok/s | graphed s | graphed new tok/s | "
               "graphed / eager | peak GiB |\n|---|---|---|---|---|---|---|---|---|\n"
             : "| model | parameters | batch | seconds | new tokens/s | peak GiB "
               "|\n|---|---|---|---|---|---|\n");
  for (const auto& name : a.shapes) {
    policies::decoder_config c;
    lm_bench_shape(name, c);
    auto lm = policies::decoder_lm::create(c, 1);
    if (!lm) return std::fprintf(stderr, "%s\n", lm.message().c_str()), 2;
    if (auto st = (*lm)->place(a.device, sampling_dtype(a)); !st)
      return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
    const auto prompt = bench_tokens(a.prompt, c.vocab_size, 1);
    const auto params = static_cast<long long>((*lm)->parameter_count());
    for (int batch : a.batches) {
      reset_peak_memory(a);
      double s = 0;
      const double rate = sampling_rate(a, **lm, prompt, batch, &s, /*cuda_graphs=*/false);
      if (!graphs) {
        std::printf("| %s | %lld | %d | %.2f | %.0f | %s |\n", name.c_str(), params, batch, s, rate,
                    peak_memory(a).c_str());
      } else {
        double gs = 0;
        const double grate = sampling_rate(a, **lm, prompt, batch, &gs, /*cuda_graphs=*/true);
        std::printf("| %s | %lld | %d | %.2f | %.0f | %.2f | %.0f | %.2fx | %s |\n", name.c_str(), params,
                    batch, s, rate, gs, grate, grate / rate, peak_memory(a).c_str());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
