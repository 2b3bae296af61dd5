#include "policies/lm/chat_template.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "policies/lm/bpe_tokenizer.hpp"
#include "tests/policies/lm/tokenizer_vectors.hpp"

namespace crucible::policies {
namespace {

TEST(ChatTemplate, ChatMlAddsQwensDefaultSystemMessage) {
  EXPECT_EQ(
      render_chat(chat_family::chatml, {{"user", "Write a kernel."}}, true),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\nWrite a kernel.<|im_end|>\n"
      "<|im_start|>assistant\n");
  EXPECT_EQ(
      render_chat(chat_family::chatml, {}, false),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n");
}

TEST(ChatTemplate, ChatMlKeepsAGivenSystemMessageAndTheTurns) {
  const std::vector<chat_message> m = {
      {"system", "You write CUDA."}, {"user", " x \n"}, {"assistant", "```cpp\n}\n```"}, {"user", "Faster?"}};
  EXPECT_EQ(render_chat(chat_family::chatml, m, false),
            "<|im_start|>system\nYou write CUDA.<|im_end|>\n"
            "<|im_start|>user\n x \n<|im_end|>\n"  // ChatML does not trim
            "<|im_start|>assistant\n```cpp\n}\n```<|im_end|>\n"
            "<|im_start|>user\nFaster?<|im_end|>\n");
}

TEST(ChatTemplate, ChatMlToolResultsAndLaterSystemMessages) {
  const std::vector<chat_message> m = {{"user", "q"},  {"assistant", "a"},    {"tool", "r1"},
                                       {"tool", "r2"}, {"critic", "dropped"}, {"system", "s2"}};
  EXPECT_EQ(
      render_chat(chat_family::chatml, m, true),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\nq<|im_end|>\n"
      "<|im_start|>assistant\na<|im_end|>\n"
      "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response>"
      "<|im_end|>\n"
      "<|im_start|>system\ns2<|im_end|>\n"
      "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama3HeadersTrimmedContentAndOneBos) {
  const std::vector<chat_message> m = {{"system", "  You write CUDA.\n"}, {"user", "Write a kernel."}};
  EXPECT_EQ(render_chat(chat_family::llama3, m, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou write CUDA.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWrite a kernel.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(
      render_chat(chat_family::llama3, {{"user", "\xE3\x80\x80hi\xC2\xA0\t"}, {"assistant", "ok"}}, false),
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nok<|eot_id|>");
  // No message, no BOS: the template writes it before the first message only.
  EXPECT_EQ(render_chat(chat_family::llama3, {}, true), "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, PlainIsTheContents) {
  EXPECT_EQ(render_chat(chat_family::plain, {{"system", "a"}, {"user", "b"}}, true), "a\n\nb");
  EXPECT_EQ(render_chat(chat_family::plain, {}, true), "");
}

TEST(ChatTemplate, FamilyFromModelTypeNameOrTemplate) {
  for (const char* s : {"qwen2", "Qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "chatml",
                        "{%- for message in messages %}{{ '<|im_start|>' + message.role }}"})
    EXPECT_EQ(chat_family_of(s).value(), chat_family::chatml) << s;
  for (const char* s : {"llama", "llama3", "{{ '<|start_header_id|>' + message['role'] }}"})
    EXPECT_EQ(chat_family_of(s).value(), chat_family::llama3) << s;
  EXPECT_EQ(chat_family_of("plain").value(), chat_family::plain);
  auto unknown = chat_family_of("mistral");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.message().find("cannot tell the chat format of 'mistral'"), std::string::npos)
      << unknown.message();
  EXPECT_FALSE(chat_family_of(""));
  EXPECT_FALSE(chat_family_of("[INST] {{ message }} [/INST]"));
}

TEST(ChatTemplate, StopStrings) {
  EXPECT_EQ(chat_stop_strings(chat_family::chatml),
            (std::vector<std::string>{"<|im_end|>", "<|endoftext|>"}));
  EXPECT_EQ(chat_stop_strings(chat_family::llama3),
            (std::vector<std::string>{"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"}));
  EXPECT_TRUE(chat_stop_strings(chat_family::plain).empty());
  EXPECT_STREQ(chat_family_name(chat_family::llama3), "llama3");
}

// ---- against the published templates and vocabularies (fetched by fetch_tokenizer_vectors.sh)
// ----------------

std::string chat_template_of(const std::string& name) {
  const std::string path = test::vector_path(name + "/tokenizer_config.json");
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << test::missing_vectors(path);
    return "";
  }
  const auto j = nlohmann::json::parse(test::read_text(path));
  return j.value("chat_template", "");
}

TEST(ChatTemplateVectors, ThePublishedTemplatesAgree) {
  const std::string qwen25 = chat_template_of("qwen2_5"), qwen3 = chat_template_of("qwen3"),
                    llama3 = chat_template_of("llama3");
  ASSERT_FALSE(qwen25.empty());
  ASSERT_FALSE(qwen3.empty());
  ASSERT_FALSE(llama3.empty());
  EXPECT_EQ(chat_family_of(qwen25).value(), chat_family::chatml);
  EXPECT_EQ(chat_family_of(qwen3).value(), chat_family::chatml);
  EXPECT_EQ(chat_family_of(llama3).value(), chat_family::llama3);
  // The pieces render_chat writes are the templates' own literals.
  for (const char* piece : {"'<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                            "assistant.<|im_end|>\\n'",
                            "'<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n'",
                            "'<|im_start|>assistant\\n'", "'\\n<tool_response>\\n'"})
    EXPECT_NE(qwen25.find(piece), std::string::npos) << piece;
  for (const char* piece : {"'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'",
                            "message['content'] | trim + '<|eot_id|>'", "bos_token + content",
                            "'<|start_header_id|>assistant<|end_header_id|>\n\n'"})
    EXPECT_NE(llama3.find(piece), std::string::npos) << piece;
}

TEST(ChatTemplateVectors, MarkersAndStopStringsAreSingleSpecialTokens) {
  for (const auto& [name, family] : {std::pair<std::string, chat_family>{"qwen2_5", chat_family::chatml},
                                     {"llama3", chat_family::llama3}}) {
    const std::string path = test::vector_path(name + "/tokenizer.json");
    ASSERT_TRUE(std::filesystem::exists(path)) << test::missing_vectors(path);
    auto t = bpe_tokenizer::load(path);
    ASSERT_TRUE(t) << t.message();
    const std::vector<chat_message> m = {{"system", "s"}, {"user", "u"}, {"assistant", "a"}, {"user", "v"}};
    const auto ids = t->encode(render_chat(family, m, true));
    const auto turn = t->token_id(family == chat_family::chatml ? "<|im_start|>" : "<|start_header_id|>");
    ASSERT_TRUE(turn);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), *turn), 5) << name;  // four turns and the generation prompt
    for (const auto& stop : chat_stop_strings(family)) {
      if (stop == "<|eom_id|>") continue;  // Llama 3.1 on; Llama 3.0 has no such token
      const auto id = t->token_id(stop);
      ASSERT_TRUE(id) << name << " " << stop;
      EXPECT_TRUE(t->is_special(*id));
      EXPECT_EQ(t->encode(stop), std::vector<int64_t>{*id});
    }
  }
}

}  // namespace
}  // namespace crucible::policies
