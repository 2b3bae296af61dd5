#pragma once
// The chat formats of the model families Crucible runs, written out as their Hugging Face chat templates
// render them (no Jinja here): ChatML as Qwen2.5's template writes it, Llama 3's headers, and plain text for
// a model trained from scratch without a chat format. Tokenize the result with parse_special on, so the
// markers become their special tokens.
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::policies {

enum class chat_family {
  chatml,  ///< Qwen2 / Qwen2.5 / Qwen3: <|im_start|>role\ncontent<|im_end|>\n
  llama3,  ///< Llama 3: <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
  plain,   ///< no markers: the contents, separated by a blank line
};

struct chat_message {
  std::string role;  ///< system, user, assistant (ChatML also: tool)
  std::string content;
};

/// The prompt text for `messages`. chatml follows Qwen2.5's template without tools: a first system message
/// is used as is, and without one the template's default system message ("You are Qwen, created by Alibaba
/// Cloud. You are a helpful assistant.") is written first; tool messages become <tool_response> blocks in a
/// user turn; other roles are dropped, as the template drops them. llama3 follows Meta-Llama-3-8B-Instruct's
/// template as revised to honour add_generation_prompt (its first release always opened the assistant's
/// turn): <|begin_of_text|> before the first message only, each content stripped of surrounding whitespace
/// (Jinja's trim). add_generation_prompt opens the assistant's turn (plain: adds nothing).
std::string render_chat(chat_family f, const std::vector<chat_message>& messages, bool add_generation_prompt);

/// The family from a config.json model_type (qwen2, qwen2_moe, qwen3, qwen3_moe: chatml; llama: llama3,
/// the only Llama Crucible runs), a family's own name (chatml, llama3, plain), or a chat template's text
/// (one that writes <|im_start|> is chatml, <|start_header_id|> llama3). Anything else is an error.
expected<chat_family> chat_family_of(const std::string& model_type_or_template_text);

/// The strings that end the assistant's turn, for the sampler's stop sequences (plain: none; stop on EOS).
std::vector<std::string> chat_stop_strings(chat_family f);

const char* chat_family_name(chat_family f);

}  // namespace crucible::policies
