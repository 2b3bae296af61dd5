#include "policies/lm/chat_template.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace crucible::policies {
namespace {

const char* qwen_default_system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

struct family_row {
  chat_family family;
  const char* name;
  std::vector<std::string> stops;
};
const std::vector<family_row>& family_table() {
  // <|eom_id|> ends a Llama 3.1+ turn that calls a tool; in Llama 3.0 it is no token and never appears.
  static const std::vector<family_row> rows = {
      {chat_family::chatml, "chatml", {"<|im_end|>", "<|endoftext|>"}},
      {chat_family::llama3, "llama3", {"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"}},
      {chat_family::plain, "plain", {}},
  };
  return rows;
}

/// Python's str.isspace (what Jinja's trim strips), over UTF-8.
bool python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

/// Decodes the code point of a well-formed sequence of `len` bytes at p (len from the lead byte).
uint32_t code_point(const unsigned char* p, size_t len) {
  if (len == 1) return p[0];
  uint32_t c = p[0] & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) c = (c << 6) | (p[i] & 0x3F);
  return c;
}

size_t lead_length(unsigned char b) {
  return b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
}

bool well_formed(const std::string& s, size_t i, size_t len) {
  if (len == 0 || i + len > s.size()) return false;
  for (size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
  return true;
}

std::string jinja_trim(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t b = 0;
  while (b < s.size()) {
    const size_t len = lead_length(p[b]);
    if (!well_formed(s, b, len) || !python_space(code_point(p + b, len))) break;
    b += len;
  }
  size_t e = s.size();
  while (e > b) {
    size_t start = e - 1;  // back to the lead byte
    while (start > b && (p[start] & 0xC0) == 0x80 && e - start < 4) --start;
    const size_t len = lead_length(p[start]);
    if (start + len != e || !well_formed(s, start, len) || !python_space(code_point(p + start, len))) break;
    e = start;
  }
  return s.substr(b, e - b);
}

std::string render_chatml(const std::vector<chat_message>& m, bool add_generation_prompt) {
  std::string out = "<|im_start|>system\n";
  out += !m.empty() && m[0].role == "system" ? m[0].content : qwen_default_system;
  out += "<|im_end|>\n";
  for (size_t i = 0; i < m.size(); ++i) {
    const auto& role = m[i].role;
    if (role == "user" || role == "assistant" || (role == "system" && i > 0)) {
      out += "<|im_start|>" + role + "\n" + m[i].content + "<|im_end|>\n";
    } else if (role == "tool") {
      if (i == 0 || m[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m[i].content + "\n</tool_response>";
      if (i + 1 == m.size() || m[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_llama3(const std::vector<chat_message>& m, bool add_generation_prompt) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (i == 0) out += "<|begin_of_text|>";
    out +=
        "<|start_header_id|>" + m[i].role + "<|end_header_id|>\n\n" + jinja_trim(m[i].content) + "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_plain(const std::vector<chat_message>& m) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) out += (i ? "\n\n" : "") + m[i].content;
  return out;
}

}  // namespace

std::string render_chat(chat_family f, const std::vector<chat_message>& messages,
                        bool add_generation_prompt) {
  switch (f) {
    case chat_family::chatml:
      return render_chatml(messages, add_generation_prompt);
    case chat_family::llama3:
      return render_llama3(messages, add_generation_prompt);
    case chat_family::plain:
      return render_plain(messages);
  }
  return {};
}

expected<chat_family> chat_family_of(const std::string& s) {
  std::string name = s;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& r : family_table())
    if (name == r.name) return r.family;
  for (const char* t : {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})
    if (name == t) return chat_family::chatml;
  if (name == "llama") return chat_family::llama3;
  if (s.find("<|im_start|>") != std::string::npos) return chat_family::chatml;
  if (s.find("<|start_header_id|>") != std::string::npos) return chat_family::llama3;
  const std::string shown = s.size() > 60 ? s.substr(0, 60) + "..." : s;
  return make_error(
      "chat template: cannot tell the chat format of '" + shown +
      "' (expected a model_type qwen2, qwen2_moe, qwen3, qwen3_moe or llama; chatml, llama3 or plain; "
      "or a chat template that writes <|im_start|> or <|start_header_id|>)");
}

std::vector<std::string> chat_stop_strings(chat_family f) {
  for (const auto& r : family_table())
    if (r.family == f) return r.stops;
  return {};
}

const char* chat_family_name(chat_family f) {
  for (const auto& r : family_table())
    if (r.family == f) return r.name;
  return "?";
}

}  // namespace crucible::policies
