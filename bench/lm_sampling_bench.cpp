// Sampling throughput of the decoder LM (issue 13): new tokens/s of sample_completions at several batch sizes
// for the embedded model of the GPU config (~36M parameters) and a random model of Qwen2.5-0.5B's shape, the
// prompt prefilled once, every completion run to --new tokens (no stop), temperature 1, no top-k/top-p, and
// the CUDA caching allocator's peak. Weights are random: the figure is the runtime's, not a model's.
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
  std::printf(
      "| model | parameters | batch | seconds | new tokens/s | peak GiB |\n|---|---|---|---|---|---|\n");
  for (const auto& name : a.shapes) {
    policies::decoder_config c;
    lm_bench_shape(name, c);
    auto lm = policies::decoder_lm::create(c, 1);
    if (!lm) return std::fprintf(stderr, "%s\n", lm.message().c_str()), 2;
    if (auto st = (*lm)->place(a.device, sampling_dtype(a)); !st)
      return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
    const auto prompt = bench_tokens(a.prompt, c.vocab_size, 1);
    for (int batch : a.batches) {
      reset_peak_memory(a);
      double s = 0;
      const double rate = sampling_rate(a, **lm, prompt, batch, &s);
      std::printf("| %s | %lld | %d | %.2f | %.0f | %s |\n", name.c_str(),
                  static_cast<long long>((*lm)->parameter_count()), batch, s, rate, peak_memory(a).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
