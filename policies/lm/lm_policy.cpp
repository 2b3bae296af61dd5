#include "policies/lm/lm_policy.hpp"

#include <algorithm>
#include <filesystem>

#include "messages/content_hash.hpp"
#include "policies/lm/answer_parser.hpp"
#include "policies/lm/contrastive_prompt.hpp"
#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/lm_checkpoint.hpp"
#include "policies/lm/lm_sampler.hpp"

namespace crucible::policies {
namespace {

namespace fs = std::filesystem;

// Marks where the prompt's text goes in a rendered chat frame: the frame's special tokens are parsed as
// such, the prompt's text never is (an exemplar's source could spell "<|im_end|>").
const std::string content_mark = "\x01\x02crucible-content-";

expected<tensor_dtype> weights_dtype(const std::string& name) {
  if (name == "f32") return tensor_dtype::f32;
  if (name == "bf16") return tensor_dtype::bf16;
  if (name == "f16") return tensor_dtype::f16;
  return make_error("policy.lm.dtype: expected f32, bf16 or f16, got '" + name + "'");
}

std::vector<int32_t> narrow(const std::vector<int64_t>& v) {
  return std::vector<int32_t>(v.begin(), v.end());
}
std::vector<int64_t> widen(const std::vector<int32_t>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace

struct lm_policy::impl {
  std::unique_ptr<decoder_lm> lm;
  bpe_tokenizer tok;
  lm_policy_options options;
  chat_family family = chat_family::plain;
  std::vector<int64_t> stop_tokens;    ///< the end of a turn (and the config's eos ids)
  std::vector<int64_t> end_of_answer;  ///< what a trained answer ends with

  impl(std::unique_ptr<decoder_lm> l, bpe_tokenizer t, const lm_policy_options& o)
      : lm(std::move(l)), tok(std::move(t)), options(o) {}

  // The prompt's tokens as the model reads it: plain, its text and a newline; a chat family, its turns in
  // the family's template, whose markers are parsed as special tokens and whose contents never are.
  std::vector<int64_t> framed(const rendered_prompt& r) const {
    if (family == chat_family::plain) {
      auto ids = tok.encode(r.text, false);
      auto tail = tok.encode("\n", true);
      ids.insert(ids.end(), tail.begin(), tail.end());
      return ids;
    }
    auto mark = [](size_t i) { return content_mark + std::to_string(i) + "\x02\x01"; };
    std::vector<chat_message> marked;
    for (size_t i = 0; i < r.turns.size(); ++i) marked.push_back({r.turns[i].role, mark(i)});
    const std::string full = render_chat(family, marked, true);
    std::vector<int64_t> ids;
    auto append = [&](const std::string& text, bool special) {
      auto part = tok.encode(text, special);
      ids.insert(ids.end(), part.begin(), part.end());
    };
    size_t at = 0;
    for (size_t i = 0; i < r.turns.size(); ++i) {
      const auto m = mark(i);
      const size_t pos = full.find(m, at);
      append(full.substr(at, pos - at), true);
      append(r.turns[i].content, false);
      at = pos + m.size();
    }
    append(full.substr(at), true);
    return ids;
  }
};

lm_policy::lm_policy(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
lm_policy::~lm_policy() = default;

expected<std::unique_ptr<lm_policy>> lm_policy::from_parts(std::unique_ptr<decoder_lm> lm,
                                                           bpe_tokenizer tokenizer,
                                                           const lm_policy_options& options) {
  if (!lm) return make_error("the language model is missing");
  if (tokenizer.vocab_size() > lm->config().vocab_size)
    return make_error("the tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                      " tokens, the model's vocabulary only " + std::to_string(lm->config().vocab_size));
  if (options.max_new_tokens < 1 || options.max_context <= options.max_new_tokens)
    return make_error("policy.lm: max_context (" + std::to_string(options.max_context) +
                      ") must exceed max_new_tokens (" + std::to_string(options.max_new_tokens) + ")");
  auto dt = weights_dtype(options.dtype);
  if (!dt) return dt.err();
  auto m = std::make_unique<impl>(std::move(lm), std::move(tokenizer), options);
  // The framing: what the tokenizer can express decides "auto".
  if (options.framing == "auto") {
    if (m->tok.token_id("<|im_start|>"))
      m->family = chat_family::chatml;
    else if (m->tok.token_id("<|start_header_id|>"))
      m->family = chat_family::llama3;
    else
      m->family = chat_family::plain;
  } else {
    auto f = chat_family_of(options.framing);
    if (!f)
      return make_error("policy.lm.framing: expected auto, plain, chatml or llama3, got '" + options.framing +
                        "'");
    m->family = *f;
  }
  for (const auto& s : chat_stop_strings(m->family))
    if (auto id = m->tok.token_id(s)) m->stop_tokens.push_back(*id);
  if (m->family == chat_family::plain) {
    auto id = m->tok.token_id(end_of_text);
    if (!id) return make_error("plain framing needs the tokenizer's " + std::string(end_of_text) + " token");
    m->stop_tokens = {*id};
  }
  if (m->stop_tokens.empty())
    return make_error("the tokenizer has none of the end-of-turn tokens of the " +
                      std::string(chat_family_name(m->family)) + " framing");
  m->end_of_answer = {m->stop_tokens.front()};
  for (auto id : m->lm->config().eos_token_ids)
    if (std::find(m->stop_tokens.begin(), m->stop_tokens.end(), id) == m->stop_tokens.end())
      m->stop_tokens.push_back(id);
  if (auto st = m->lm->place(options.device, *dt); !st) return st.err();
  return std::unique_ptr<lm_policy>(new lm_policy(std::move(m)));
}

expected<std::unique_ptr<lm_policy>> lm_policy::load(const lm_policy_options& options) {
  if (options.checkpoint.empty())
    return make_error(
        "policy.lm.checkpoint: no model directory (config.json, model.safetensors, tokenizer.json)");
  auto tok = bpe_tokenizer::load((fs::path(options.checkpoint) / "tokenizer.json").string());
  if (!tok) return tok.err();
  auto lm = decoder_lm::load(options.checkpoint);
  if (!lm) return lm.err();
  return from_parts(std::move(*lm), std::move(*tok), options);
}

expected<std::vector<int64_t>> lm_policy::encode_prompt(const prompt& p, std::string* text) const {
  const auto& m = *impl_;
  prompt_budget budget;
  budget.max_tokens = m.options.max_context - m.options.max_new_tokens;
  budget.count_tokens = [&](const rendered_prompt& r) { return static_cast<int64_t>(m.framed(r).size()); };
  auto rendered = render_contrastive_prompt(p, budget);
  if (!rendered) return rendered.err();
  if (text) *text = rendered->text;
  return m.framed(*rendered);
}

std::vector<int64_t> lm_policy::encode_answer(const std::string& answer) const {
  auto ids = impl_->tok.encode(answer, false);
  ids.insert(ids.end(), impl_->end_of_answer.begin(), impl_->end_of_answer.end());
  return ids;
}

expected<std::vector<policy_candidate>> lm_policy::sample(const prompt& p, int n, double temperature,
                                                          uint64_t seed) {
  auto& m = *impl_;
  auto context = encode_prompt(p);
  if (!context) return context.err();
  sampling_options o;
  o.n = n;
  o.temperature = temperature;
  o.top_k = m.options.top_k;
  o.top_p = m.options.top_p;
  o.cuda_graphs = m.options.cuda_graphs;
  o.max_new_tokens = m.options.max_new_tokens;
  o.stop_tokens = m.stop_tokens;
  o.seed = seed;
  auto completions = sample_completions(*m.lm, *context, o);
  if (!completions) return completions.err();
  std::vector<policy_candidate> out;
  for (auto& c : *completions) {
    policy_candidate pc;
    std::vector<int64_t> text_ids = c.tokens;
    if (c.finish == finish_reason::stop && !text_ids.empty()) text_ids.pop_back();
    pc.answer = m.tok.decode(text_ids, true);
    auto parsed = parse_answer(pc.answer, answer_form_of(p.task));
    if (parsed.problem == answer_problem::none) {
      pc.source = std::move(parsed.code);
    } else {
      pc.format_error = parsed.reason;
      if (c.finish == finish_reason::length)
        pc.format_error += " (the answer was cut at " + std::to_string(m.options.max_new_tokens) + " tokens)";
    }
    pc.context = narrow(*context);
    pc.tokens = narrow(c.tokens);
    pc.logprobs = std::move(c.logprobs);
    out.push_back(std::move(pc));
  }
  return out;
}

expected<std::vector<float>> lm_policy::log_probs(const task_spec&, const std::vector<int32_t>& context,
                                                  const std::vector<int32_t>& tokens, double temperature) {
  return completion_logprobs(*impl_->lm, widen(context), widen(tokens), temperature);
}

std::vector<char> lm_policy::save_weights() const {
  auto bytes = lm_weights_bytes(impl_->lm->model().model);
  if (!bytes) return {};
  return std::vector<char>(bytes->begin(), bytes->end());
}

status lm_policy::load_weights(const std::vector<char>& bytes) {
  return load_lm_weights_bytes(impl_->lm->model().model, std::string(bytes.begin(), bytes.end()));
}

int64_t lm_policy::parameter_count() const {
  return impl_->lm->parameter_count();
}

status lm_policy::save(const std::string& dir) const {
  if (auto st = impl_->lm->save(dir, tensor_dtype::f32); !st) return st;
  return impl_->tok.save((fs::path(dir) / "tokenizer.json").string());
}

decoder_lm& lm_policy::model() {
  return *impl_->lm;
}
const bpe_tokenizer& lm_policy::tokenizer() const {
  return impl_->tok;
}
const lm_policy_options& lm_policy::options() const {
  return impl_->options;
}
chat_family lm_policy::framing() const {
  return impl_->family;
}

}  // namespace crucible::policies
