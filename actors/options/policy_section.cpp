#include "actors/options/policy_section.hpp"

#include <cstdlib>

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(policy_section& s) {
  return {
      {"kind", &s.kind},
      {"d_model", &s.d_model},
      {"layers", &s.layers},
      {"heads", &s.heads},
      {"max_context", &s.max_context},
      {"threads", &s.threads},
      {"max_weights_message_mb", &s.max_weights_message_mb},
      {"lm.checkpoint", &s.lm.checkpoint},
      {"lm.device", &s.lm.device},
      {"lm.dtype", &s.lm.dtype},
      {"lm.framing", &s.lm.framing},
      {"lm.max_context", &s.lm.max_context},
      {"lm.max_new_tokens", &s.lm.max_new_tokens},
      {"lm.top_p", &s.lm.top_p},
      {"lm.top_k", &s.lm.top_k},
      {"lm.cuda_graphs", &s.lm.cuda_graphs},
      {"lm.micro_batch", &s.lm.micro_batch},
      {"lm.bf16", &s.lm.bf16},
      {"lm.checkpoint_activations", &s.lm.checkpoint_activations},
      {"lm.weight_decay", &s.lm.weight_decay},
      {"remote.url", &s.remote.endpoint.url},
      {"remote.model", &s.remote.endpoint.model},
      {"remote.api_key_env", &s.remote_api_key_env},
      {"remote.timeout_s", &s.remote.endpoint.timeout_s},
      {"remote.framing", &s.remote.framing},
      {"remote.tokenizer", &s.remote.tokenizer},
      {"remote.max_context", &s.remote.max_context},
      {"remote.max_new_tokens", &s.remote.max_new_tokens},
      {"remote.top_p", &s.remote.top_p},
      {"remote.top_k", &s.remote.top_k},
  };
}

status validate(const policy_section& p, const runtime::config&) {
  if (p.kind != "program" && p.kind != "lm" && p.kind != "remote")
    return make_error("policy.kind: expected program, lm or remote, got '" + p.kind + "'");
  if (!(p.d_model >= 8 && p.heads >= 1 && p.d_model % p.heads == 0))
    return make_error("policy.d_model: expected >= 8 and divisible by policy.heads");
  if (p.layers < 1) return make_error("policy.layers: expected >= 1");
  if (p.max_context < 32) return make_error("policy.max_context: expected >= 32");
  if (p.threads < 1) return make_error("policy.threads: expected >= 1");
  if (!(p.max_weights_message_mb > 0)) return make_error("policy.max_weights_message_mb: expected > 0");
  const auto& lm = p.lm;
  if (lm.dtype != "f32" && lm.dtype != "bf16" && lm.dtype != "f16")
    return make_error("policy.lm.dtype: expected f32, bf16 or f16, got '" + lm.dtype + "'");
  if (lm.framing != "auto" && lm.framing != "plain" && lm.framing != "chatml" && lm.framing != "llama3")
    return make_error("policy.lm.framing: expected auto, plain, chatml or llama3, got '" + lm.framing + "'");
  if (lm.max_new_tokens < 1) return make_error("policy.lm.max_new_tokens: expected >= 1");
  if (lm.max_context <= lm.max_new_tokens)
    return make_error(
        "policy.lm.max_context: expected more than policy.lm.max_new_tokens (the prompt needs room)");
  if (!(lm.top_p > 0 && lm.top_p <= 1)) return make_error("policy.lm.top_p: expected in (0, 1]");
  if (lm.top_k < 0) return make_error("policy.lm.top_k: expected >= 0");
  if (lm.micro_batch < 1) return make_error("policy.lm.micro_batch: expected >= 1");
  if (lm.device != "cpu" && lm.device.rfind("cuda", 0) != 0)
    return make_error("policy.lm.device: expected cpu, cuda or cuda:N, got '" + lm.device + "'");
  const auto& r = p.remote;
  if (p.kind == "remote" && r.endpoint.url.rfind("http://", 0) != 0)
    return make_error("policy.remote.url: expected an http:// URL of a /v1/completions endpoint, got '" +
                      r.endpoint.url + "'");
  if (r.framing != "plain" && r.framing != "chatml" && r.framing != "llama3")
    return make_error("policy.remote.framing: expected plain, chatml or llama3, got '" + r.framing + "'");
  if (r.max_new_tokens < 1 || r.max_context <= r.max_new_tokens)
    return make_error("policy.remote.max_context: expected more than policy.remote.max_new_tokens (>= 1)");
  if (!(r.endpoint.timeout_s > 0)) return make_error("policy.remote.timeout_s: expected > 0");
  if (!p.remote_api_key_env.empty() && !std::getenv(p.remote_api_key_env.c_str()))
    return make_error("policy.remote.api_key_env: the environment variable " + p.remote_api_key_env +
                      " is not set");
  return {};
}

void resolve(policy_section& p, const runtime::config& c, const runtime::key_is_set&) {
  p.target = c.target;
  if (!p.remote_api_key_env.empty())
    if (const char* key = std::getenv(p.remote_api_key_env.c_str())) p.remote.endpoint.api_key = key;
}

const bool registered = runtime::register_section<policy_section>({fields, validate, resolve});

}  // namespace
}  // namespace crucible::actors
