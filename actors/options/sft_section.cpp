#include "actors/options/sft_section.hpp"

#include <algorithm>

#include "actors/options/policy_section.hpp"
#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(sft_section& s) {
  return {
      {"corpus_policy", &s.corpus_policy},
      {"corpus_steps", &s.corpus_steps},
      {"corpus_minutes", &s.corpus_minutes},
      {"jsonl", &s.jsonl},
      {"variants", &s.variants},
      {"contrastive", &s.contrastive},
      {"vocab_size", &s.vocab_size},
      {"model.hidden_size", &s.hidden_size},
      {"model.layers", &s.layers},
      {"model.heads", &s.heads},
      {"model.kv_heads", &s.kv_heads},
      {"model.intermediate_size", &s.intermediate_size},
      {"model.rope_theta", &s.rope_theta},
      {"steps", &s.steps},
      {"batch", &s.batch},
      {"lr", &s.lr},
      {"warmup_steps", &s.warmup_steps},
      {"max_minutes", &s.max_minutes},
      {"checkpoint_every", &s.checkpoint_every},
  };
}

status validate(const sft_section& s, const runtime::config& cfg) {
  if (s.corpus_policy != "program" && s.corpus_policy != "remote" && s.corpus_policy != "none")
    return make_error("sft.corpus_policy: expected program, remote or none, got '" + s.corpus_policy + "'");
  const bool sft_listed = std::find(cfg.stages.begin(), cfg.stages.end(), "sft") != cfg.stages.end();
  if (sft_listed && cfg.section<policy_section>().kind != "lm")
    return make_error(
        "stages: sft trains a language model that the later stages sample: set policy.kind to lm "
        "(with " +
        cfg.section<policy_section>().kind + " nothing would use it)");
  if (sft_listed && s.corpus_policy == "none" && s.jsonl.empty())
    return make_error("sft.corpus_policy: none leaves the sft stage no corpus: give sft.jsonl");
  if (sft_listed && s.corpus_policy == "remote" &&
      cfg.section<policy_section>().remote.endpoint.url.rfind("http://", 0) != 0)
    return make_error(
        "sft.corpus_policy: remote samples the model at policy.remote.url, which is not an "
        "http:// URL");
  if (s.corpus_steps < 1) return make_error("sft.corpus_steps: expected >= 1");
  if (!(s.corpus_minutes > 0) || !(s.max_minutes > 0))
    return make_error("sft.corpus_minutes and sft.max_minutes: expected > 0");
  if (s.variants < 0 || s.contrastive < 0)
    return make_error("sft.variants and sft.contrastive: expected >= 0");
  if (s.vocab_size < 300) return make_error("sft.vocab_size: expected >= 300 (256 bytes and the merges)");
  if (s.hidden_size < 8 || s.layers < 1 || s.heads < 1 || s.kv_heads < 1 || s.intermediate_size < 1)
    return make_error("sft.model: hidden_size >= 8, layers, heads, kv_heads and intermediate_size >= 1");
  if (s.hidden_size % s.heads != 0 || s.heads % s.kv_heads != 0 || (s.hidden_size / s.heads) % 2 != 0)
    return make_error(
        "sft.model: heads must divide hidden_size into an even head size, and kv_heads must divide heads");
  if (s.steps < 1 || s.batch < 1) return make_error("sft.steps and sft.batch: expected >= 1");
  if (!(s.lr > 0)) return make_error("sft.lr: expected > 0");
  if (s.warmup_steps < 0) return make_error("sft.warmup_steps: expected >= 0");
  if (s.checkpoint_every < 1) return make_error("sft.checkpoint_every: expected >= 1");
  return {};
}

const bool registered = runtime::register_section<sft_section>({fields, validate});

}  // namespace
}  // namespace crucible::actors
