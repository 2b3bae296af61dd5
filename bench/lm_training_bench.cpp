// Training throughput of the decoder LM next to its sampling throughput (issue 13): per model shape and batch
// size, new tokens/s of sample_completions, and completion tokens/s through one full GRPO step
// (lm_grpo_trainer: the frozen reference's pass, the training forward and backward, AdamW) and one SFT step
// (lm_sft_trainer), with the CUDA caching allocator's peak for each. Shapes: the embedded model of the GPU
// config (Qwen2 architecture, vocab 8192, hidden 512, 10 layers, 8 heads, 4 kv heads, intermediate 1536,
// tied, ~36M parameters) and a random model of Qwen2.5-0.5B's shape. Each batch holds `batch` sequences of
// --prompt prompt tokens and --new completion tokens. Weights are random: the figures are the runtime's.
//
// --dtype bf16 samples with bf16 weights and trains with fp32 master weights under bf16 autocast (the
// trainers' bf16 option); f32 does both in fp32. Each measurement follows one untimed warm-up at the same
// shapes, and is timed between device synchronizes.
//
//   build/bench/lm_training_bench [--device cpu|cuda] [--dtype f32|bf16] [--shapes embedded,qwen0.5b]
//       [--batches 1,8,64] [--prompt N] [--new N] [--micro-batch 8] [--checkpoint] [--logit-elements N]
#include <cstdio>
#include <string>
#include <vector>

#include "bench/lm_bench_common.hpp"
#include "policies/lm/lm_grpo_trainer.hpp"
#include "policies/lm/lm_sft_trainer.hpp"

using namespace crucible;
using namespace crucible::bench;
using namespace crucible::policies;

namespace {

struct row {
  int batch = 0;
  double sampling = 0, grpo_s = 0, grpo = 0, sft_s = 0, sft = 0;
  std::string sampling_peak, grpo_peak, sft_peak;
};

// Three significant figures: the CPU's rates can be below 1 token/s, the H200's in the tens of thousands.
std::string rate(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, x >= 100 ? "%.0f" : "%.3g", x);
  return buf;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const auto a = parse_lm_bench_args(
      argc, argv,
      "lm_training_bench [--device cpu|cuda] [--dtype f32|bf16] [--shapes embedded,qwen0.5b] "
      "[--batches 1,8,64] [--prompt N] [--new N] [--micro-batch 8] [--checkpoint] "
      "[--logit-elements N]");
  const bool bf16 = a.dtype == "bf16";
  std::printf(
      "device %s, dtype %s, prompt %lld + completion %lld tokens per sequence, micro-batch %lld, "
      "activation checkpointing %s, %lld logit elements per chunk\n",
      a.device.c_str(), a.dtype.c_str(), static_cast<long long>(a.prompt),
      static_cast<long long>(a.new_tokens), static_cast<long long>(a.micro_batch),
      a.checkpoint ? "on" : "off", static_cast<long long>(a.logit_elements));
  if (bf16 && !a.cuda())
    std::printf("(bf16 autocast is CUDA-only: the CPU trains in fp32; sampling uses bf16 weights)\n");
  for (const auto& name : a.shapes) {
    decoder_config c;
    lm_bench_shape(name, c);
    auto made = decoder_lm::create(c, 1);
    if (!made) fail(made.message());
    auto& lm = **made;
    std::printf("\n%s: %lld parameters\n\n", name.c_str(), static_cast<long long>(lm.parameter_count()));
    const auto prompt = bench_tokens(a.prompt, c.vocab_size, 1);
    std::vector<row> rows;

    // Sampling, with the weights as --dtype.
    if (auto st = lm.place(a.device, sampling_dtype(a)); !st) fail(st.message());
    for (int batch : a.batches) {
      row r;
      r.batch = batch;
      reset_peak_memory(a);
      r.sampling = sampling_rate(a, lm, prompt, batch);
      r.sampling_peak = peak_memory(a);
      rows.push_back(r);
    }

    // Training, fp32 master weights (bf16 autocast on CUDA when --dtype bf16).
    if (auto st = lm.place(a.device, tensor_dtype::f32); !st) fail(st.message());
    lm_train_options go;
    go.grpo.lr = 1e-6;
    go.micro_batch = a.micro_batch;
    go.bf16 = bf16;
    go.checkpoint_activations = a.checkpoint;
    go.logit_elements = a.logit_elements;
    lm_sft_options so;
    so.lr = 1e-6;
    so.micro_batch = a.micro_batch;
    so.bf16 = bf16;
    so.checkpoint_activations = a.checkpoint;
    so.logit_elements = a.logit_elements;
    lm_grpo_trainer grpo(lm, go);
    lm_sft_trainer sft(lm, so);
    for (auto& r : rows) {
      lm_group group;
      std::vector<lm_example> examples;
      for (int i = 0; i < r.batch; ++i) {
        lm_sample s;
        s.prompt = prompt;
        s.completion = bench_tokens(a.new_tokens, c.vocab_size, 100 + static_cast<uint64_t>(i));
        s.logprobs.assign(s.completion.size(), -9.0f);
        s.reward = i % 2;
        examples.push_back({s.prompt, s.completion});
        group.members.push_back(std::move(s));
      }
      const double tokens = static_cast<double>(r.batch) * static_cast<double>(a.new_tokens);
      const std::vector<lm_group> groups{group};
      auto grpo_step = [&] {
        if (auto st = grpo.step(groups); !st) fail("grpo: " + st.message());
      };
      auto sft_step = [&] {
        if (auto st = sft.step(examples); !st) fail("sft: " + st.message());
      };
      grpo_step();  // warm-up
      reset_peak_memory(a);
      r.grpo_s = timed(a, grpo_step);
      r.grpo = tokens / r.grpo_s;
      r.grpo_peak = peak_memory(a);
      sft_step();  // warm-up
      reset_peak_memory(a);
      r.sft_s = timed(a, sft_step);
      r.sft = tokens / r.sft_s;
      r.sft_peak = peak_memory(a);
      std::fprintf(stderr, "  %s batch %d done\n", name.c_str(), r.batch);
    }
    std::printf(
        "| batch | sampling new tok/s | sampling peak GiB | GRPO step s | GRPO completion tok/s | "
        "GRPO peak GiB | SFT step s | SFT completion tok/s | SFT peak GiB |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& r : rows)
      std::printf("| %d | %s | %s | %.3f | %s | %s | %.3f | %s | %s |\n", r.batch, rate(r.sampling).c_str(),
                  r.sampling_peak.c_str(), r.grpo_s, rate(r.grpo).c_str(), r.grpo_peak.c_str(), r.sft_s,
                  rate(r.sft).c_str(), r.sft_peak.c_str());
    std::fflush(stdout);
  }
  return 0;
}
