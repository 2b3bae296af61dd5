#include "policies/lm/bpe_tokenizer.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/policies/lm/tokenizer_vectors.hpp"

namespace crucible::policies {
namespace {

using json = nlohmann::json;

bpe_tokenizer must(expected<bpe_tokenizer> r) {
  if (!r) throw std::runtime_error(r.message());
  return std::move(*r);
}

json byte_level(bool add_prefix_space, bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

const char* qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json qwen2_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", qwen2_pattern}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byte_level(false, false)}}};
}

/// A small byte-level BPE written as tokenizer.json: the 256 byte tokens (id = byte value), one token per
/// merge (raw bytes), then vocab-only tokens.
struct tiny_spec {
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> extra_vocab;
  json added = json::array();
  json normalizer = nullptr;
  json pre_tokenizer = byte_level(false, true);  // GPT-2's
  bool ignore_merges = false;
  bool merges_as_pairs = false;
};

json tiny_json(const tiny_spec& t) {
  json vocab = json::object();
  int64_t next = 0;
  auto add = [&](const std::string& raw) {
    const std::string s = byte_level_spelling(raw);
    if (!vocab.contains(s)) vocab[s] = next++;
  };
  for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
  json merges = json::array();
  for (const auto& [a, b] : t.merges) {
    add(a + b);
    const std::string sa = byte_level_spelling(a), sb = byte_level_spelling(b);
    merges.push_back(t.merges_as_pairs ? json::array({sa, sb}) : json(sa + " " + sb));
  }
  for (const auto& e : t.extra_vocab) add(e);
  return {{"version", "1.0"},
          {"added_tokens", t.added},
          {"normalizer", t.normalizer},
          {"pre_tokenizer", t.pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", byte_level(false, true)},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"ignore_merges", t.ignore_merges},
            {"vocab", vocab},
            {"merges", merges}}}};
}

bpe_tokenizer tiny(const tiny_spec& t) {
  return must(bpe_tokenizer::parse(tiny_json(t).dump()));
}

json added_token(int64_t id, const std::string& content, bool special, bool normalized = false) {
  return {{"id", id},        {"content", content},       {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", normalized}, {"special", special}};
}

/// The id of a vocab token given by the bytes it stands for.
int64_t id_of(const bpe_tokenizer& t, const std::string& raw) {
  auto id = t.token_id(byte_level_spelling(raw));
  if (!id) throw std::runtime_error("no token for '" + raw + "'");
  return *id;
}

std::vector<int64_t> ids_of(const bpe_tokenizer& t, const std::vector<std::string>& raws) {
  std::vector<int64_t> out;
  for (const auto& r : raws) out.push_back(id_of(t, r));
  return out;
}

TEST(BpeTokenizer, Gpt2ByteAlphabet) {
  EXPECT_EQ(byte_level_spelling(" "), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_level_spelling("\n"), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_level_spelling("a!~"), "a!~");
  EXPECT_EQ(byte_level_spelling(std::string(1, '\0')), "\xC4\x80");    // U+0100
  EXPECT_EQ(byte_level_spelling(std::string(1, '\xAD')), "\xC5\x83");  // U+0143, the last one moved
  EXPECT_EQ(byte_level_spelling(std::string(1, '\xA1')), "\xC2\xA1");  // printable Latin-1 stays
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level_bytes(byte_level_spelling(all)), all);
}

TEST(BpeTokenizer, MergesApplyByRankNotLeftToRight) {
  tiny_spec s;
  s.merges = {{"e", "l"}, {"h", "e"}, {"l", "l"}, {"l", "o"}};
  auto t = tiny(s);
  // e+l outranks h+e, so "hello" is h|el|lo although h+e is the leftmost pair.
  EXPECT_EQ(t.encode("hello"), ids_of(t, {"h", "el", "lo"}));
  tiny_spec full;
  full.merges = {{"l", "l"}, {"h", "e"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}};
  auto f = tiny(full);
  EXPECT_EQ(f.encode("hello"), ids_of(f, {"hello"}));
  EXPECT_EQ(f.encode("hello world"), ids_of(f, {"hello", " w", "o", "r", "l", "d"}));
  // A run of one byte merges pairwise from the left.
  tiny_spec aa;
  aa.merges = {{"a", "a"}, {"aa", "aa"}};
  auto a = tiny(aa);
  EXPECT_EQ(a.encode("aaaaa"), ids_of(a, {"aaaa", "a"}));
}

TEST(BpeTokenizer, BothMergeFormsReadTheSame) {
  tiny_spec s;
  s.merges = {{"i", "n"}, {" ", "in"}, {"t", "e"}, {" in", "te"}};
  auto strings = tiny(s);
  s.merges_as_pairs = true;
  auto pairs = tiny(s);
  for (const char* text : {" internal interest", "int main() { return 0; }", " inte"})
    EXPECT_EQ(strings.encode(text), pairs.encode(text)) << text;
  EXPECT_EQ(strings.encode(" inte"), ids_of(strings, {" inte"}));
  EXPECT_EQ(strings.to_json(), pairs.to_json());  // written back as "a b" strings
}

TEST(BpeTokenizer, IgnoreMergesTakesAWholeVocabWord) {
  tiny_spec s;
  s.merges = {{"h", "e"}, {"l", "l"}, {"he", "ll"}};
  s.extra_vocab = {"hello"};  // no merge makes it
  EXPECT_EQ(tiny(s).encode("hello"), ids_of(tiny(s), {"hell", "o"}));
  s.ignore_merges = true;
  auto t = tiny(s);
  EXPECT_EQ(t.encode("hello"), ids_of(t, {"hello"}));
  EXPECT_EQ(t.encode("hello!"), ids_of(t, {"hello", "!"}));
  EXPECT_EQ(t.encode("hell"), ids_of(t, {"hell"}));
}

TEST(BpeTokenizer, PreTokenizers) {
  tiny_spec gpt2;
  auto g = tiny(gpt2);
  EXPECT_EQ(g.pre_tokenize("Hello world, it's 2024!"),
            (std::vector<std::string>{"Hello", " world", ",", " it", "'s", " 2024", "!"}));
  EXPECT_EQ(g.pre_tokenize("a   b\n\n"), (std::vector<std::string>{"a", "  ", " b", "\n\n"}));
  gpt2.pre_tokenizer = byte_level(true, true);
  EXPECT_EQ(tiny(gpt2).pre_tokenize("Hello world"), (std::vector<std::string>{" Hello", " world"}));

  tiny_spec qwen;
  qwen.pre_tokenizer = qwen2_pre_tokenizer();
  auto q = tiny(qwen);
  // Qwen2 splits digits one by one and keeps newlines with the punctuation before them.
  EXPECT_EQ(q.pre_tokenize("x = 12;\n\n    y"),
            (std::vector<std::string>{"x", " =", " ", "1", "2", ";\n\n", "   ", " y"}));
  EXPECT_EQ(q.pre_tokenize("IT'S"), (std::vector<std::string>{"IT", "'S"}));  // (?i:'s)

  tiny_spec literal;
  literal.pre_tokenizer = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Isolated"}, {"invert", false}},
        byte_level(false, false)}}};
  EXPECT_EQ(tiny(literal).pre_tokenize("a-b--c"), (std::vector<std::string>{"a", "-", "b", "-", "-", "c"}));
}

TEST(BpeTokenizer, AddedAndSpecialTokens) {
  tiny_spec s;
  s.merges = {{"a", "b"}};
  s.added = json::array({added_token(300, "<|s|>", true), added_token(301, "<tool>", false),
                         added_token(302, "<a>", false), added_token(303, "<a>b", false)});
  auto t = tiny(s);
  EXPECT_EQ(t.encode("ab<|s|>ab"), (std::vector<int64_t>{id_of(t, "ab"), 300, id_of(t, "ab")}));
  EXPECT_EQ(t.encode("<tool><|s|>"), (std::vector<int64_t>{301, 300}));
  EXPECT_EQ(t.encode("x<a>bc"), (std::vector<int64_t>{id_of(t, "x"), 303, id_of(t, "c")}));  // the longest
  // parse_special off: the special token is text; the other added tokens still match.
  const auto as_text = t.encode("<|s|><tool>", false);
  ASSERT_EQ(as_text.size(), 6u);
  EXPECT_EQ(as_text.back(), 301);
  EXPECT_EQ(t.decode(as_text), "<|s|><tool>");
  EXPECT_EQ(t.decode({id_of(t, "ab"), 300, 301}), "ab<|s|><tool>");
  EXPECT_EQ(t.decode({id_of(t, "ab"), 300, 301}, true), "ab<tool>");  // only special ones are skipped
  EXPECT_EQ(t.token_id("<|s|>"), 300);
  EXPECT_EQ(t.token_text(300), "<|s|>");
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(301));
  EXPECT_EQ(t.token_text(id_of(t, " ")), "\xC4\xA0");
  EXPECT_EQ(t.token_id("nope"), std::nullopt);
  EXPECT_EQ(t.token_text(9999), "");
  EXPECT_EQ(t.vocab_size(), 304);
  EXPECT_EQ(t.decode({-1, 9999, id_of(t, "a")}), "a");  // unknown ids are skipped
}

TEST(BpeTokenizer, AddedTokenStripAndSingleWord) {
  tiny_spec s;
  json l = added_token(300, "<mask>", true), r = added_token(301, "<r>", true),
       w = added_token(302, "cat", false);
  l["lstrip"] = true;
  r["rstrip"] = true;
  w["single_word"] = true;
  s.added = json::array({l, r, w});
  auto t = tiny(s);
  EXPECT_EQ(t.encode("x  <mask>"), (std::vector<int64_t>{id_of(t, "x"), 300}));
  EXPECT_EQ(t.encode("<r> \n y"), (std::vector<int64_t>{301, id_of(t, "y")}));
  EXPECT_EQ(t.encode("a cat"), (std::vector<int64_t>{id_of(t, "a"), id_of(t, " "), 302}));
  EXPECT_EQ(t.encode("concat"), ids_of(t, {"c", "o", "n", "c", "a", "t"}));  // inside a word: text
}

TEST(BpeTokenizer, NfcIsAppliedWhenTheNormalizerSaysSo) {
  const std::string composed = "caf\xC3\xA9", decomposed = "cafe\xCC\x81";
  tiny_spec s;
  s.merges = {{"\xC3", "\xA9"}};
  auto plain = tiny(s);
  EXPECT_NE(plain.encode(composed), plain.encode(decomposed));
  EXPECT_EQ(plain.decode(plain.encode(decomposed)), decomposed);
  s.normalizer = {{"type", "NFC"}};
  auto nfc = tiny(s);
  EXPECT_EQ(nfc.encode(decomposed), nfc.encode(composed));
  EXPECT_EQ(nfc.decode(nfc.encode(decomposed)), composed);
  s.normalizer = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
  EXPECT_EQ(tiny(s).encode(decomposed), nfc.encode(composed));
  // An added token marked normalized matches the normalized text; one that is not, the raw text.
  s.added =
      json::array({added_token(300, "\xC3\xA9!", false, true), added_token(301, "e\xCC\x81?", false, false)});
  auto t = tiny(s);
  EXPECT_EQ(t.encode("e\xCC\x81!"), (std::vector<int64_t>{300}));
  EXPECT_EQ(t.encode("e\xCC\x81?"), (std::vector<int64_t>{301}));
  // Bytes that are not UTF-8 pass through NFC untouched.
  const std::string broken = "e\xCC\x81\xFF\xC3";
  EXPECT_EQ(nfc.decode(nfc.encode(broken)), "\xC3\xA9\xFF\xC3");
}

TEST(BpeTokenizer, RoundTripsAnyBytes) {
  tiny_spec s;
  s.merges = {{"i", "n"}, {"t", "e"}, {" ", "in"}, {"\xF0", "\x9F"}, {"\xE4", "\xB8"}};
  s.added = json::array({added_token(300, "<|endoftext|>", true)});
  for (bool qwen : {false, true}) {
    if (qwen) s.pre_tokenizer = qwen2_pre_tokenizer();
    auto t = tiny(s);
    for (const std::string text :
         {std::string(""), std::string("int main() {\n\treturn 0;\n}\n"),
          std::string("\xF0\x9F\xA6\x99 llama \xF0\x9F\x9A\x80"),
          std::string("\xE4\xB8\xAD\xE6\x96\x87 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"),
          std::string("\xFF\xFE\x80 \xC3( \xED\xA0\x80"), std::string("a<|endoftext|>b"),
          std::string("\0\x01\x7F", 3), std::string(3000, ' ') + "x"}) {
      EXPECT_EQ(t.decode(t.encode(text)), text);
    }
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) {
      std::string text(rng() % 64, '\0');
      for (auto& c : text) c = static_cast<char>(rng() & 0xFF);
      const auto ids = t.encode(text);
      ASSERT_EQ(t.decode(ids), text) << "random string " << i;
      for (auto id : ids) ASSERT_TRUE(id >= 0 && id < t.vocab_size());
    }
  }
}

TEST(BpeTokenizer, EncodesFromSeveralThreads) {
  tiny_spec s;
  s.merges = {{"i", "n"}, {"t", "e"}, {" ", "in"}, {" in", "te"}};
  s.pre_tokenizer = qwen2_pre_tokenizer();
  auto t = tiny(s);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back(" integer " + std::to_string(i) + " interval\n");
  std::vector<std::vector<int64_t>> want;
  for (const auto& x : texts) want.push_back(t.encode(x));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 20; ++rep)
        for (size_t i = 0; i < texts.size(); ++i) bad[k] += t.encode(texts[i]) != want[i];
    });
  for (auto& th : threads) th.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(bad[k], 0);
}

TEST(BpeTokenizer, SavedJsonLoadsBackTheSame) {
  tiny_spec s;
  s.merges = {{"i", "n"}, {"t", "e"}, {" ", "in"}, {" in", "te"}, {"\xC3", "\xA9"}};
  s.extra_vocab = {"zzz"};
  s.ignore_merges = true;
  s.normalizer = {{"type", "NFC"}};
  s.pre_tokenizer = qwen2_pre_tokenizer();
  json strip = added_token(400, "<mask>", true);
  strip["lstrip"] = true;
  s.added = json::array({added_token(399, "<|endoftext|>", true), strip, added_token(401, "<code>", false)});
  auto t = tiny(s);
  const auto path =
      (std::filesystem::temp_directory_path() / ("crucible_bpe_" + std::to_string(::getpid()) + ".json"))
          .string();
  ASSERT_TRUE(t.save(path));
  auto back = bpe_tokenizer::load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->vocab_size(), t.vocab_size());
  for (const std::string text :
       {"zzz internal <mask> <code> cafe\xCC\x81 <|endoftext|>", "int\n\n  inte 42"}) {
    EXPECT_EQ(back->encode(text), t.encode(text)) << text;
    EXPECT_EQ(back->encode(text, false), t.encode(text, false)) << text;
  }
  EXPECT_EQ(back->to_json(), t.to_json());
  // The written file is a tokenizer.json: the keys `tokenizers` reads, merges as "a b" strings.
  const json j = json::parse(t.to_json());
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["model"]["ignore_merges"], true);
  EXPECT_EQ(j["model"]["merges"][0], "i n");
  EXPECT_EQ(j["added_tokens"][1]["lstrip"], true);
  EXPECT_EQ(j["normalizer"]["type"], "NFC");
  EXPECT_EQ(j["pre_tokenizer"], qwen2_pre_tokenizer());
  EXPECT_EQ(j["model"]["vocab"]["zzz"], 261);  // after the 256 bytes and 5 merges
  EXPECT_FALSE(t.save("/nonexistent-dir/x.json"));
}

TEST(BpeTokenizer, MalformedFilesAreErrorsThatSayWhat) {
  const json good = tiny_json(tiny_spec{{{"a", "b"}}});
  ASSERT_TRUE(bpe_tokenizer::parse(good.dump()));
  struct bad_case {
    std::function<void(json&)> mutate;
    std::string says;
  };
  const std::vector<bad_case> cases = {
      {[](json& j) { j = json::array(); }, "expected a JSON object"},
      {[](json& j) { j.erase("model"); }, "model is missing"},
      {[](json& j) { j["model"]["type"] = "Unigram"; },
       "tokenizer.json: model.type 'Unigram' is not supported; byte-level BPE only"},
      {[](json& j) { j["model"]["type"] = "WordPiece"; }, "model.type 'WordPiece' is not supported"},
      {[](json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout 0.1 is not supported"},
      {[](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback"},
      {[](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }, "model.continuing_subword_prefix"},
      {[](json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }, "model.end_of_word_suffix"},
      {[](json& j) { j["model"].erase("vocab"); }, "model.vocab is missing"},
      {[](json& j) { j["model"]["vocab"]["a"] = "one"; }, "model.vocab['a']: expected an id >= 0"},
      {[](json& j) { j["model"]["vocab"]["a"] = -3; }, "model.vocab['a']: expected an id >= 0"},
      {[](json& j) { j["model"]["vocab"]["zz"] = 0; }, "share the id 0"},
      {[](json& j) { j["model"].erase("merges"); }, "model.merges is missing"},
      {[](json& j) { j["model"]["merges"][0] = "a b c"; }, "model.merges[0]: 'a b c' is not two tokens"},
      {[](json& j) { j["model"]["merges"][0] = 42; }, "model.merges[0]: expected \"a b\" or [\"a\", \"b\"]"},
      {[](json& j) { j["model"]["merges"][0] = json::array({"a"}); }, "model.merges[0]: expected"},
      {[](json& j) { j["model"]["merges"][0] = "a \xE2\x82\xAC"; },
       "model.merges[0]: '\xE2\x82\xAC' is not in model.vocab"},
      {[](json& j) { j["model"]["merges"].push_back("b a"); },
       "model.merges[1]: the merged token 'ba' is not in"},
      {[](json& j) { j["added_tokens"] = 5; }, "added_tokens: expected an array"},
      {[](json& j) {
         j["added_tokens"] = json::array({{{"content", "<x>"}}});
       },
       "added_tokens[0]: expected an object with an id"},
      {[](json& j) { j["added_tokens"] = json::array({added_token(300, "", true)}); },
       "added_tokens[0]: content is missing or empty"},
      {[](json& j) {
         j["added_tokens"] = json::array({added_token(300, "<x>", true), added_token(301, "<x>", true)});
       },
       "added_tokens[1]: '<x>' is listed twice"},
      {[](json& j) {
         j["added_tokens"] = json::array({added_token(300, "<x>", true), added_token(300, "<y>", true)});
       },
       "'<x>' and '<y>' share the id 300"},
      {[](json& j) {
         j["normalizer"] = {{"type", "Lowercase"}};
       },
       "normalizer type 'Lowercase' is not supported (NFC or none)"},
      {[](json& j) {
         j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "NFKC"}}}}};
       },
       "normalizer type 'NFKC' is not supported"},
      {[](json& j) { j.erase("pre_tokenizer"); },
       "pre_tokenizer is missing; byte-level BPE needs a ByteLevel"},
      {[](json& j) {
         j["pre_tokenizer"] = {{"type", "Whitespace"}};
       },
       "pre_tokenizer: type 'Whitespace' is not supported"},
      {[](json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", 3}};
       },
       "pre_tokenizer.pretokenizers: expected an array"},
      {[](json& j) {
         j["pre_tokenizer"] = qwen2_pre_tokenizer();
         j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L}";
       },
       "pre_tokenizer.pretokenizers[0]: the pattern '(\\p{L}' does not compile (PCRE2: "},
      {[](json& j) {
         j["pre_tokenizer"] = qwen2_pre_tokenizer();
         j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
       },
       "pre_tokenizer.pretokenizers[0].behavior 'Removed' is not supported (Isolated)"},
      {[](json& j) {
         j["pre_tokenizer"] = qwen2_pre_tokenizer();
         j["pre_tokenizer"]["pretokenizers"][0]["invert"] = true;
       },
       "pre_tokenizer.pretokenizers[0].invert"},
      {[](json& j) {
         j["pre_tokenizer"] = qwen2_pre_tokenizer();
         j["pre_tokenizer"]["pretokenizers"][0].erase("pattern");
       },
       "pre_tokenizer.pretokenizers[0].pattern: expected {\"Regex\": ...} or {\"String\": ...}"},
      {[](json& j) {
         j["pre_tokenizer"] = qwen2_pre_tokenizer();
         j["pre_tokenizer"]["pretokenizers"].erase(1);
       },
       "pre_tokenizer: expected one ByteLevel step, last"},
      {[](json& j) {
         j["pre_tokenizer"] = qwen2_pre_tokenizer();
         std::swap(j["pre_tokenizer"]["pretokenizers"][0], j["pre_tokenizer"]["pretokenizers"][1]);
       },
       "pre_tokenizer: expected one ByteLevel step, last"},
      {[](json& j) {
         j["decoder"] = {{"type", "WordPiece"}};
       },
       "decoder type 'WordPiece' is not supported (ByteLevel)"},
      {[](json& j) { j["decoder"] = nullptr; }, "decoder null is not supported (ByteLevel)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    json j = good;
    cases[i].mutate(j);
    auto r = bpe_tokenizer::parse(j.dump());
    ASSERT_FALSE(r) << "case " << i << " (" << cases[i].says << ") parsed";
    EXPECT_NE(r.message().find(cases[i].says), std::string::npos) << "case " << i << ": " << r.message();
  }
  auto not_json = bpe_tokenizer::parse("{\"model\": ");
  ASSERT_FALSE(not_json);
  EXPECT_NE(not_json.message().find("tokenizer.json: not JSON"), std::string::npos) << not_json.message();
  auto missing = bpe_tokenizer::load("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message(), "cannot read '/nonexistent/tokenizer.json'");
}

// ---- public vectors: llama.cpp's test strings with the ids Hugging Face's tokenizers gives them
// ----------------

struct vector_set {
  std::vector<std::string> texts;
  std::vector<std::vector<int64_t>> ids;
};

/// llama.cpp's models/ggml-vocab-NAME.gguf.inp / .out: strings each followed by "\n__ggml_vocab_test__\n";
/// one line of space-separated ids per string (encode(text, add_special_tokens=False)).
vector_set read_vectors(const std::string& name) {
  const std::string inp = test::vector_path("llama.cpp/ggml-vocab-" + name + ".gguf.inp");
  const std::string out = test::vector_path("llama.cpp/ggml-vocab-" + name + ".gguf.out");
  vector_set v;
  for (const auto& p : {inp, out})
    if (!std::filesystem::exists(p)) {
      ADD_FAILURE() << test::missing_vectors(p);
      return v;
    }
  const std::string raw = test::read_text(inp), sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      v.texts.push_back(raw.substr(pos));
      break;
    }
    v.texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream lines(test::read_text(out));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ls(line);
    std::vector<int64_t> ids;
    for (int64_t id; ls >> id;) ids.push_back(id);
    v.ids.push_back(std::move(ids));
  }
  EXPECT_EQ(v.texts.size(), v.ids.size()) << inp << " and " << out << " disagree on the number of strings";
  return v;
}

expected<bpe_tokenizer> load_vector_tokenizer(const std::string& name) {
  const std::string p = test::vector_path(name + "/tokenizer.json");
  if (!std::filesystem::exists(p)) return make_error(test::missing_vectors(p));
  return bpe_tokenizer::load(p);
}

void expect_vectors(const std::string& tokenizer, const std::string& vocab) {
  auto t = load_vector_tokenizer(tokenizer);
  ASSERT_TRUE(t) << t.message();
  const auto v = read_vectors(vocab);
  ASSERT_GE(v.texts.size(), 40u) << "too few strings in llama.cpp's " << vocab << " vectors";
  ASSERT_EQ(v.texts.size(), v.ids.size());
  size_t exact = 0;
  for (size_t i = 0; i < v.texts.size(); ++i) {
    const auto got = t->encode(v.texts[i]);
    EXPECT_EQ(got, v.ids[i]) << tokenizer << " on " << vocab << " string " << i << ": '" << v.texts[i] << "'";
    exact += got == v.ids[i];
    EXPECT_EQ(t->decode(got), v.texts[i]) << "string " << i;
  }
  std::cout << "[ vectors  ] " << tokenizer << " / llama.cpp " << vocab << ": " << exact << " of "
            << v.texts.size() << " strings give the exact ids\n";
}

TEST(BpeTokenizerVectors, Qwen25MatchesQwen2Vectors) {
  expect_vectors("qwen2_5", "qwen2");
}
TEST(BpeTokenizerVectors, Qwen3MatchesQwen2Vectors) {
  expect_vectors("qwen3", "qwen2");
}  // ["a","b"] merges
TEST(BpeTokenizerVectors, Llama3MatchesLlamaBpeVectors) {
  expect_vectors("llama3", "llama-bpe");
}
TEST(BpeTokenizerVectors, Gpt2MatchesGpt2Vectors) {
  expect_vectors("gpt2", "gpt-2");
}

TEST(BpeTokenizerVectors, SavedRealTokenizersKeepTheirIds) {
  // Qwen3's merges are pairs (written back as strings); Llama 3 sets ignore_merges.
  for (const auto& [name, vocab] :
       {std::pair<std::string, std::string>{"qwen3", "qwen2"}, {"llama3", "llama-bpe"}}) {
    auto t = load_vector_tokenizer(name);
    ASSERT_TRUE(t) << t.message();
    auto back = bpe_tokenizer::parse(t->to_json());
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(back->vocab_size(), t->vocab_size());
    const auto v = read_vectors(vocab);
    ASSERT_FALSE(v.texts.empty());
    for (size_t i = 0; i < v.texts.size(); ++i)
      EXPECT_EQ(back->encode(v.texts[i]), v.ids[i]) << name << " string " << i;
  }
}

TEST(BpeTokenizerVectors, SpecialTokensOfTheRealVocabularies) {
  auto qwen = load_vector_tokenizer("qwen2_5");
  ASSERT_TRUE(qwen) << qwen.message();
  // tokenizer_config.json names the chat markers; each is one special token, matched inside text.
  const json config = json::parse(test::read_text(test::vector_path("qwen2_5/tokenizer_config.json")));
  for (const auto& marker : config["additional_special_tokens"]) {
    const auto id = qwen->token_id(marker.get<std::string>());
    ASSERT_TRUE(id) << marker;
    EXPECT_TRUE(qwen->is_special(*id));
    const auto ids = qwen->encode("x" + marker.get<std::string>() + "y");
    ASSERT_EQ(ids.size(), 3u) << marker;
    EXPECT_EQ(ids[1], *id);
    EXPECT_GT(qwen->encode(marker.get<std::string>(), false).size(), 1u) << marker;
  }
  const std::string chat = "<|im_start|>user\nint x = 1;<|im_end|>\n";
  EXPECT_EQ(qwen->decode(qwen->encode(chat)), chat);
  EXPECT_EQ(qwen->decode(qwen->encode(chat), true), "user\nint x = 1;\n");
  EXPECT_EQ(qwen->vocab_size(), 151665);  // 151643 BPE tokens and 22 added (Qwen2.5's published size)

  auto llama = load_vector_tokenizer("llama3");
  ASSERT_TRUE(llama) << llama.message();
  EXPECT_EQ(llama->vocab_size(), 128256);  // Llama 3's published vocab size
  const auto bot = llama->token_id("<|begin_of_text|>");
  ASSERT_TRUE(bot);
  EXPECT_EQ(llama->encode("<|begin_of_text|>hi").front(), *bot);
}

TEST(BpeTokenizerVectors, RealTokenizersRoundTripAnyBytes) {
  for (const char* name : {"gpt2", "llama3", "qwen2_5"}) {
    auto t = load_vector_tokenizer(name);
    ASSERT_TRUE(t) << t.message();
    const bool nfc = std::string(name) == "qwen2_5";
    std::mt19937 rng(11);
    for (int i = 0; i < 300; ++i) {
      std::string text(rng() % 80, '\0');
      // Qwen normalizes to NFC: keep its random text to ASCII controls, code and invalid bytes.
      for (auto& c : text)
        c = static_cast<char>(nfc ? (rng() % 2 ? rng() % 128 : 0x80 + rng() % 64) : rng() & 0xFF);
      ASSERT_EQ(t->decode(t->encode(text, false)), text) << name << " random string " << i;
    }
    for (const std::string text :
         {"template <typename T>\n__global__ void k(T* x) {\n  x[threadIdx.x] *= 2;\n}\n",
          "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C "
          "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD"})
      EXPECT_EQ(t->decode(t->encode(text)), text) << name;
  }
}

}  // namespace
}  // namespace crucible::policies
