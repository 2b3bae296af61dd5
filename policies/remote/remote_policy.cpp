#include "policies/remote/remote_policy.hpp"

#include <optional>

#include "policies/lm/answer_parser.hpp"
#include "policies/lm/bpe_tokenizer.hpp"
#include "policies/lm/chat_template.hpp"
#include "policies/lm/contrastive_prompt.hpp"

namespace crucible::policies {

struct remote_policy::impl {
  remote_policy_options options;
  chat_family family = chat_family::plain;
  std::optional<bpe_tokenizer> tok;
  std::function<bool()> interrupted;

  std::string framed(const rendered_prompt& r) const {
    if (family == chat_family::plain) return r.text + "\n";
    return render_chat(family, r.turns, true);
  }
};

remote_policy::remote_policy(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
remote_policy::~remote_policy() = default;

void remote_policy::set_interrupt(std::function<bool()> interrupted) {
  impl_->interrupted = std::move(interrupted);
}

expected<std::unique_ptr<remote_policy>> remote_policy::make(const remote_policy_options& options) {
  auto m = std::make_unique<impl>();
  m->options = options;
  auto f = chat_family_of(options.framing);
  if (!f)
    return make_error("policy.remote.framing: expected plain, chatml or llama3, got '" + options.framing +
                      "'");
  m->family = *f;
  if (!options.tokenizer.empty()) {
    auto t = bpe_tokenizer::load(options.tokenizer);
    if (!t) return make_error("policy.remote.tokenizer: " + t.message());
    m->tok.emplace(std::move(*t));
  }
  if (options.max_new_tokens < 1) return make_error("policy.remote.max_new_tokens: expected >= 1");
  return std::unique_ptr<remote_policy>(new remote_policy(std::move(m)));
}

expected<std::string> remote_policy::prompt_text(const prompt& p) const {
  const auto& m = *impl_;
  prompt_budget budget;
  if (m.tok) {
    budget.max_tokens = m.options.max_context - m.options.max_new_tokens;
    budget.count_tokens = [&](const rendered_prompt& r) {
      return static_cast<int64_t>(m.tok->encode(m.framed(r), true).size());
    };
  }
  auto rendered = render_contrastive_prompt(p, budget);
  if (!rendered) return rendered.err();
  return m.framed(*rendered);
}

expected<std::vector<policy_candidate>> remote_policy::sample(const prompt& p, int n, double temperature,
                                                              uint64_t seed) {
  const auto& m = *impl_;
  auto text = prompt_text(p);
  if (!text) return text.err();
  completion_request r;
  r.prompt = *text;
  r.n = n;
  r.max_tokens = m.options.max_new_tokens;
  r.temperature = temperature;
  r.top_p = m.options.top_p;
  r.top_k = m.options.top_k;
  r.stop = chat_stop_strings(m.family);
  r.seed = static_cast<int64_t>(seed & 0x7fffffffffffffffull);
  auto answers = request_completions(m.options.endpoint, r, m.interrupted);
  if (!answers) return make_error("remote policy: " + answers.message());
  std::vector<policy_candidate> out;
  for (auto& a : *answers) {
    policy_candidate pc;
    pc.answer = std::move(a.text);
    auto parsed = parse_answer(pc.answer, answer_form_of(p.task));
    if (parsed.problem == answer_problem::none)
      pc.source = std::move(parsed.code);
    else
      pc.format_error =
          parsed.reason + (a.finish == remote_finish::length ? " (the answer was cut at max_tokens)" : "");
    // The server's tokens are strings of its vocabulary: nothing here can train on them, so only their
    // log-probs are kept (for the record).
    pc.logprobs = std::move(a.logprobs);
    out.push_back(std::move(pc));
  }
  return out;
}

expected<std::vector<float>> remote_policy::log_probs(const task_spec&, const std::vector<int32_t>&,
                                                      const std::vector<int32_t>&, double) {
  return make_error("a remote policy cannot score stored tokens: its weights live on the server");
}

}  // namespace crucible::policies
