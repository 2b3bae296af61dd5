// Sampling throughput of the decoder LM (issue 13): tokens/s of sample_completions at batch 1, 8 and 64 for a
// model of the embedded size and for a random model of Qwen2.5-0.5B's shape, prompt prefilled once, every
// completion run to max_new_tokens (no stop), temperature 1, no top-k/top-p. Weights are random: the figure
// is the runtime's, not a model's.
//
//   build/bench/lm_sampling_bench [--device cuda] [--dtype bf16|f16|f32] [--new 128] [--prompt 128]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "policies/lm/lm_sampler.hpp"

using namespace crucible::policies;

namespace {

decoder_config shape(const std::string& name) {
  decoder_config c;
  c.family = lm_family::qwen2;
  c.qkv_bias = true;
  c.tie_word_embeddings = true;
  c.rope_theta = 1e6;
  if (name == "qwen2.5-0.5b") {
    c.vocab_size = 151936, c.hidden_size = 896, c.intermediate_size = 4864, c.num_hidden_layers = 24;
    c.num_attention_heads = 14, c.num_key_value_heads = 2, c.head_dim = 64;
  } else {  // the embedded model's size class: an 8k BPE vocabulary, ~40M parameters
    c.vocab_size = 8192, c.hidden_size = 512, c.intermediate_size = 1408, c.num_hidden_layers = 12;
    c.num_attention_heads = 8, c.num_key_value_heads = 4, c.head_dim = 64;
  }
  return c;
}

void sync(const std::string& device) {
  if (device.rfind("cuda", 0) == 0) torch::cuda::synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = torch::cuda::is_available() ? "cuda" : "cpu", dtype_name_arg = "bf16";
  int64_t new_tokens = 128, prompt_len = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--device") device = argv[i + 1];
    if (k == "--dtype") dtype_name_arg = argv[i + 1];
    if (k == "--new") new_tokens = std::stoll(argv[i + 1]);
    if (k == "--prompt") prompt_len = std::stoll(argv[i + 1]);
  }
  const tensor_dtype dtype = dtype_name_arg == "f32"   ? tensor_dtype::f32
                             : dtype_name_arg == "f16" ? tensor_dtype::f16
                                                       : tensor_dtype::bf16;
  std::printf("device %s, dtype %s, prompt %lld tokens, %lld new tokens per completion\n\n", device.c_str(),
              dtype_name_arg.c_str(), static_cast<long long>(prompt_len), static_cast<long long>(new_tokens));
  std::printf("| model | parameters | batch | seconds | new tokens/s |\n|---|---|---|---|---|\n");
  for (const std::string name : {"embedded-40m", "qwen2.5-0.5b"}) {
    auto lm = decoder_lm::create(shape(name), 1);
    if (!lm) return std::fprintf(stderr, "%s\n", lm.message().c_str()), 2;
    if (auto st = (*lm)->place(device, dtype); !st)
      return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
    std::vector<int64_t> prompt;
    for (int64_t i = 0; i < prompt_len; ++i) prompt.push_back((i * 7919) % (*lm)->config().vocab_size);
    for (int batch : {1, 8, 64}) {
      sampling_options o;
      o.n = batch;
      o.max_new_tokens = new_tokens;
      o.seed = 3;
      o.max_new_tokens = 8;  // warm-up: kernels, allocator
      (void)sample_completions(**lm, prompt, o);
      o.max_new_tokens = new_tokens;
      sync(device);
      auto t0 = std::chrono::steady_clock::now();
      auto out = sample_completions(**lm, prompt, o);
      sync(device);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!out) return std::fprintf(stderr, "%s\n", out.message().c_str()), 2;
      int64_t made = 0;
      for (const auto& c : *out) made += static_cast<int64_t>(c.tokens.size());
      std::printf("| %s | %lld | %d | %.2f | %.0f |\n", name.c_str(),
                  static_cast<long long>((*lm)->parameter_count()), batch, s, static_cast<double>(made) / s);
      std::fflush(stdout);
    }
  }
  return 0;
}
