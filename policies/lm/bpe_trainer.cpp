#include "policies/lm/bpe_trainer.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace crucible::policies {
namespace {

using json = nlohmann::json;

/// Qwen2's split (Qwen2.5 and Qwen3 keep it): contractions, letters with one leading non-letter, single
/// digits, punctuation runs with their newlines, newline runs, and whitespace that leaves one space for the
/// next word.
const char* qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // the JSON writer rejects ill-formed UTF-8
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

/// tokenizer.json for a byte-level BPE configured as Qwen2's: vocab by id (each entry the bytes it stands
/// for), merges by rank, special tokens after the vocab.
std::string tokenizer_json(const std::vector<std::string>& token_bytes,
                           const std::vector<std::pair<int32_t, int32_t>>& merges,
                           const std::vector<std::string>& specials) {
  json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = json::array();
  for (size_t i = 0; i < specials.size(); ++i)
    j["added_tokens"].push_back({{"id", token_bytes.size() + i},
                                 {"content", specials[i]},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", true}});
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", qwen2_pattern}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          byte_level}}};
  j["post_processor"] = byte_level;
  j["decoder"] = byte_level;
  json vocab = json::object();
  for (size_t id = 0; id < token_bytes.size(); ++id) vocab[byte_level_spelling(token_bytes[id])] = id;
  json ms = json::array();
  for (const auto& [l, r] : merges)
    ms.push_back(byte_level_spelling(token_bytes[l]) + " " + byte_level_spelling(token_bytes[r]));
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", std::move(vocab)},
                {"merges", std::move(ms)}};
  return j.dump();
}

struct word {
  std::vector<int32_t> symbols;
  int64_t count = 0;
  int64_t visited = -1;  // the last merge that rewrote it
};

uint64_t key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
int32_t left_of(uint64_t k) {
  return static_cast<int32_t>(k >> 32);
}
int32_t right_of(uint64_t k) {
  return static_cast<int32_t>(k & 0xFFFFFFFFu);
}

/// A candidate merge: most frequent first; among equals, the pair of lower ids.
struct candidate {
  int64_t count;
  uint64_t pair;
  bool operator<(const candidate& o) const {  // for std::push_heap: "less" means lower priority
    if (count != o.count) return count < o.count;
    return pair > o.pair;
  }
};

}  // namespace

expected<bpe_tokenizer> train_bpe(const std::vector<std::string>& corpus, const bpe_training_options& o) {
  const int64_t n_special = static_cast<int64_t>(o.special_tokens.size());
  if (o.vocab_size < 256 + n_special)
    return make_error("train_bpe: vocab_size " + std::to_string(o.vocab_size) +
                      " is below the 256 byte tokens + " + std::to_string(n_special) + " special tokens");
  if (o.min_frequency < 1)
    return make_error("train_bpe: min_frequency " + std::to_string(o.min_frequency) + " must be at least 1");
  std::unordered_set<std::string> seen;
  for (const auto& s : o.special_tokens) {
    if (s.empty()) return make_error("train_bpe: a special token is empty");
    if (!valid_utf8(s)) return make_error("train_bpe: the special token '" + s + "' is not UTF-8");
    if (!seen.insert(s).second) return make_error("train_bpe: the special token '" + s + "' is listed twice");
  }

  std::vector<std::string> token_bytes(256);
  for (int b = 0; b < 256; ++b) token_bytes[b] = std::string(1, static_cast<char>(b));
  std::vector<std::pair<int32_t, int32_t>> merges;

  // The corpus's pre-tokens, counted, by the tokenizer the result will be (special tokens split off).
  auto base = bpe_tokenizer::parse(tokenizer_json(token_bytes, merges, o.special_tokens));
  if (!base) return make_error("train_bpe: " + base.message());
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& doc : corpus)
    for (auto& piece : base->pre_tokenize(doc)) ++counts[std::move(piece)];
  std::vector<word> words;
  words.reserve(counts.size());
  for (auto& [text, count] : counts) {
    word w;
    w.symbols.reserve(text.size());
    for (char c : text) w.symbols.push_back(static_cast<unsigned char>(c));
    w.count = count;
    words.push_back(std::move(w));
  }
  counts.clear();

  // Pair counts and where each pair occurs (a superset: a word stays listed after its pair is gone).
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;
  for (uint32_t w = 0; w < words.size(); ++w) {
    const auto& s = words[w].symbols;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t k = key(s[i], s[i + 1]);
      pair_count[k] += words[w].count;
      auto& list = where[k];
      if (list.empty() || list.back() != w) list.push_back(w);
    }
  }
  std::vector<candidate> heap;
  heap.reserve(pair_count.size());
  for (const auto& [k, c] : pair_count) heap.push_back({c, k});
  std::make_heap(heap.begin(), heap.end());

  std::unordered_map<std::string, int32_t> id_of;
  for (int b = 0; b < 256; ++b) id_of[token_bytes[b]] = b;
  const auto target = static_cast<size_t>(o.vocab_size - n_special);
  std::vector<uint64_t> created;
  while (token_bytes.size() < target && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const candidate top = heap.back();
    heap.pop_back();
    const int64_t now = pair_count[top.pair];
    if (now != top.count) {  // stale: counts of existing pairs only fall, so re-queue at the true count
      if (now > 0) {
        heap.push_back({now, top.pair});
        std::push_heap(heap.begin(), heap.end());
      }
      continue;
    }
    if (top.count < o.min_frequency) break;  // the most frequent pair is too rare: so are all others

    const int32_t l = left_of(top.pair), r = right_of(top.pair);
    const std::string merged = token_bytes[l] + token_bytes[r];
    int32_t id;
    auto found = id_of.find(merged);
    if (found != id_of.end()) {
      id = found->second;  // two pairs spell the same token ("a"+"bc", "ab"+"c"): one token, two merges
    } else {
      id = static_cast<int32_t>(token_bytes.size());
      token_bytes.push_back(merged);
      id_of.emplace(merged, id);
    }
    merges.emplace_back(l, r);
    const auto merge_index = static_cast<int64_t>(merges.size());

    created.clear();
    auto list = std::move(where[top.pair]);
    where.erase(top.pair);
    for (uint32_t w : list) {
      word& wd = words[w];
      if (wd.visited == merge_index) continue;
      wd.visited = merge_index;
      auto& s = wd.symbols;
      bool has = false;
      for (size_t i = 0; i + 1 < s.size() && !has; ++i) has = s[i] == l && s[i + 1] == r;
      if (!has) continue;
      // Rewrite the word, left to right, and move its pair counts from the old spelling to the new.
      for (size_t i = 0; i + 1 < s.size(); ++i) pair_count[key(s[i], s[i + 1])] -= wd.count;
      std::vector<int32_t> out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == l && s[i + 1] == r) {
          out.push_back(id);
          i += 2;
        } else {
          out.push_back(s[i++]);
        }
      }
      s.swap(out);
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        const uint64_t k = key(s[i], s[i + 1]);
        pair_count[k] += wd.count;
        if (s[i] == id || s[i + 1] == id) {
          auto& wl = where[k];
          if (wl.empty() || wl.back() != w) wl.push_back(w);
          created.push_back(k);
        }
      }
    }
    // Pairs that hold the new token are new: queue them at their full count.
    std::sort(created.begin(), created.end());
    created.erase(std::unique(created.begin(), created.end()), created.end());
    for (uint64_t k : created) {
      heap.push_back({pair_count[k], k});
      std::push_heap(heap.begin(), heap.end());
    }
    pair_count.erase(top.pair);
  }

  auto result = bpe_tokenizer::parse(tokenizer_json(token_bytes, merges, o.special_tokens));
  if (!result) return make_error("train_bpe: " + result.message());
  return result;
}

}  // namespace crucible::policies
