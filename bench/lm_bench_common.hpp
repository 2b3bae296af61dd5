#pragma once
// What the decoder LM's throughput benches share: the two model shapes, the command line, timing with a
// device synchronize, and the CUDA caching allocator's peak (where LibTorch is a CUDA build; bench/
// CMakeLists.txt defines CRUCIBLE_TORCH_CUDA then).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "policies/lm/decoder_config.hpp"
#include "policies/lm/lm_sampler.hpp"

#if defined(CRUCIBLE_TORCH_CUDA) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#define CRUCIBLE_BENCH_PEAK_MEMORY 1
#endif

namespace crucible::bench {

using policies::decoder_config;

/// "embedded": the embedded model of the GPU config (Qwen2 architecture, 8k vocabulary, ~36M parameters);
/// "qwen0.5b": Qwen2.5-0.5B's shape (494M parameters). Weights are random: the figures are the runtime's.
inline bool lm_bench_shape(const std::string& name, decoder_config& c) {
  c = decoder_config{};
  c.family = policies::lm_family::qwen2;
  c.qkv_bias = true;
  c.tie_word_embeddings = true;
  c.rope_theta = 1e6;
  if (name == "qwen0.5b") {
    c.vocab_size = 151936, c.hidden_size = 896, c.intermediate_size = 4864, c.num_hidden_layers = 24;
    c.num_attention_heads = 14, c.num_key_value_heads = 2, c.head_dim = 64;
    return true;
  }
  if (name == "embedded") {
    c.vocab_size = 8192, c.hidden_size = 512, c.intermediate_size = 1536, c.num_hidden_layers = 10;
    c.num_attention_heads = 8, c.num_key_value_heads = 4, c.head_dim = 64;
    return true;
  }
  return false;
}

struct lm_bench_args {
  std::string device;
  std::string dtype;  ///< f32 | bf16 (| f16 for sampling)
  std::vector<std::string> shapes;
  std::vector<int> batches;
  int64_t prompt = 0, new_tokens = 0;
  int64_t micro_batch = 8;  ///< the trainers' sequences per forward
  bool checkpoint = false;  ///< the trainers' activation checkpointing
  int64_t logit_elements = 1 << 22;
  bool cuda() const { return device.rfind("cuda", 0) == 0; }
};

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

/// Defaults: on CUDA bf16, both shapes, batches 1, 8, 64, a 512-token prompt and 256 new tokens; on the CPU
/// f32, the embedded shape, batches 1 and 8, 32 + 16 tokens (a minute or two on two cores). Exits with a
/// usage line on an unknown flag or shape.
inline lm_bench_args parse_lm_bench_args(int argc, char** argv, const char* usage) {
  lm_bench_args a;
  a.device = torch::cuda::is_available() ? "cuda" : "cpu";
  std::string shapes, batches, dtype;
  int64_t prompt = -1, new_tokens = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--checkpoint") {
      a.checkpoint = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\nusage: %s\n", argv[0], k.c_str(), usage);
      std::exit(2);
    }
    const std::string v = argv[++i];
    if (k == "--device")
      a.device = v;
    else if (k == "--dtype")
      dtype = v;
    else if (k == "--shapes")
      shapes = v;
    else if (k == "--batches")
      batches = v;
    else if (k == "--prompt")
      prompt = std::stoll(v);
    else if (k == "--new")
      new_tokens = std::stoll(v);
    else if (k == "--micro-batch")
      a.micro_batch = std::stoll(v);
    else if (k == "--logit-elements")
      a.logit_elements = std::stoll(v);
    else {
      std::fprintf(stderr, "%s: unknown flag %s\nusage: %s\n", argv[0], k.c_str(), usage);
      std::exit(2);
    }
  }
  const bool cuda = a.cuda();
  a.dtype = !dtype.empty() ? dtype : cuda ? "bf16" : "f32";
  a.shapes = split(!shapes.empty() ? shapes : cuda ? "embedded,qwen0.5b" : "embedded");
  for (const auto& b : split(!batches.empty() ? batches : cuda ? "1,8,64" : "1,8"))
    a.batches.push_back(std::stoi(b));
  a.prompt = prompt > 0 ? prompt : cuda ? 512 : 32;
  a.new_tokens = new_tokens > 0 ? new_tokens : cuda ? 256 : 16;
  decoder_config c;
  for (const auto& s : a.shapes)
    if (!lm_bench_shape(s, c)) {
      std::fprintf(stderr, "%s: unknown shape %s (embedded, qwen0.5b)\n", argv[0], s.c_str());
      std::exit(2);
    }
  if (a.dtype != "f32" && a.dtype != "bf16" && a.dtype != "f16") {
    std::fprintf(stderr, "%s: --dtype is f32, bf16 or f16\n", argv[0]);
    std::exit(2);
  }
  return a;
}

inline void sync(const lm_bench_args& a) {
  if (a.cuda()) torch::cuda::synchronize();
}

/// Seconds `fn` takes, the device synchronized before and after.
template <class F>
double timed(const lm_bench_args& a, F&& fn) {
  sync(a);
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  sync(a);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline void reset_peak_memory(const lm_bench_args& a) {
#ifdef CRUCIBLE_BENCH_PEAK_MEMORY
  if (a.cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
#else
  (void)a;
#endif
}

/// The caching allocator's peak of allocated bytes since the last reset, in GiB; "-" where not measured.
inline std::string peak_memory(const lm_bench_args& a) {
#ifdef CRUCIBLE_BENCH_PEAK_MEMORY
  if (a.cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(stats.allocated_bytes[0].peak) / (1 << 30));
    return buf;
  }
#else
  (void)a;
#endif
  return "-";
}

/// Token ids of a fixed pseudo-random sequence (no weights are trained toward anything: only shapes matter).
inline std::vector<int64_t> bench_tokens(int64_t n, int64_t vocab, uint64_t salt) {
  std::vector<int64_t> t;
  uint64_t x = 0x9E3779B97F4A7C15ull ^ salt;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t.push_back(static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(vocab)));
  }
  return t;
}

/// New tokens per second of sample_completions: `batch` completions of `new_tokens` each (no stop), after a
/// short warm-up. `made` receives the tokens drawn.
inline double sampling_rate(const lm_bench_args& a, policies::decoder_lm& lm,
                            const std::vector<int64_t>& prompt, int batch, double* seconds = nullptr,
                            bool cuda_graphs = true) {
  policies::sampling_options o;
  o.n = batch;
  o.cuda_graphs = cuda_graphs;
  o.seed = 3;
  o.max_new_tokens = 8;  // warm-up: kernels, allocator, the graph's capture (its capacity fits both calls)
  (void)policies::sample_completions(lm, prompt, o);
  o.max_new_tokens = a.new_tokens;
  int64_t made = 0;
  const double s = timed(a, [&] {
    auto out = policies::sample_completions(lm, prompt, o);
    if (!out) {
      std::fprintf(stderr, "sampling: %s\n", out.message().c_str());
      std::exit(2);
    }
    for (const auto& c : *out) made += static_cast<int64_t>(c.tokens.size());
  });
  if (seconds) *seconds = s;
  return static_cast<double>(made) / s;
}

inline policies::tensor_dtype sampling_dtype(const lm_bench_args& a) {
  return a.dtype == "f32"   ? policies::tensor_dtype::f32
         : a.dtype == "f16" ? policies::tensor_dtype::f16
                            : policies::tensor_dtype::bf16;
}

}  // namespace crucible::bench
