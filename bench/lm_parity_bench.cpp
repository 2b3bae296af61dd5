// Crucible's decoder LM against Hugging Face transformers on the same weights (issue 13): for each model
// directory made by bench/lm_parity/make_reference.py, loads the checkpoint, computes the logits of the
// reference's input ids (one forward pass, and token by token with the KV cache), prints the largest
// difference from transformers' logits, and writes the model back (DIR/crucible_copy) for the reverse check.
//
//   build/bench/lm_parity_bench DIR [DIR ...]      exit 1 when a difference reaches 1e-4
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <torch/torch.h>

#include "policies/lm/decoder_lm.hpp"
#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/safetensors.hpp"

using namespace crucible::policies;

namespace {

const stored_tensor* find(const safetensors_file& f, const std::string& name) {
  for (const auto& t : f.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: lm_parity_bench DIR [DIR ...]\n");
    return 2;
  }
  constexpr double bound = 1e-4;
  bool ok = true;
  std::printf(
      "| model | parameters | sequences x tokens | max abs logit | max diff (forward) | max diff (KV cache) "
      "|\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int a = 1; a < argc; ++a) {
    const std::string dir = argv[a];
    auto lm = decoder_lm::load(dir);
    auto ref = read_safetensors(dir + "/reference.safetensors");
    if (!lm || !ref) {
      std::fprintf(stderr, "%s: %s\n", dir.c_str(), !lm ? lm.message().c_str() : ref.message().c_str());
      return 2;
    }
    const auto* ids_t = find(*ref, "input_ids");
    const auto* logits_t = find(*ref, "logits");
    if (!ids_t || !logits_t || ids_t->dtype != tensor_dtype::i64 || logits_t->dtype != tensor_dtype::f32) {
      std::fprintf(stderr, "%s: reference.safetensors needs input_ids (I64) and logits (F32)\n", dir.c_str());
      return 2;
    }
    torch::NoGradGuard no_grad;
    auto ids = torch::from_blob(const_cast<char*>(ids_t->data.data()), ids_t->shape, torch::kLong).clone();
    auto expect =
        torch::from_blob(const_cast<char*>(logits_t->data.data()), logits_t->shape, torch::kFloat).clone();
    auto& m = (*lm)->model().model;
    auto full = m->logits(m->hidden(ids));
    lm_cache cache;
    std::vector<torch::Tensor> steps;
    for (int64_t i = 0; i < ids.size(1); ++i)
      steps.push_back(m->logits(m->hidden(ids.narrow(1, i, 1), &cache)));
    auto stepped = torch::cat(steps, 1);
    const double d_full = (full - expect).abs().max().item<double>();
    const double d_step = (stepped - expect).abs().max().item<double>();
    std::printf("| %s (%s) | %lld | %lld x %lld | %.3f | %.3g | %.3g |\n", dir.c_str(),
                model_type_of((*lm)->config().family), static_cast<long long>((*lm)->parameter_count()),
                static_cast<long long>(ids.size(0)), static_cast<long long>(ids.size(1)),
                expect.abs().max().item<double>(), d_full, d_step);
    ok = ok && d_full < bound && d_step < bound;
    if (auto st = (*lm)->save(dir + "/crucible_copy"); !st) {
      std::fprintf(stderr, "%s: %s\n", dir.c_str(), st.message().c_str());
      return 2;
    }
  }
  std::printf("%s: every difference %s %.0e\n", ok ? "pass" : "FAIL", ok ? "below" : "not below", bound);
  return ok ? 0 : 1;
}
