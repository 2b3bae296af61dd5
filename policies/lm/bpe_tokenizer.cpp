#include "policies/lm/bpe_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8  // CMake defines it (crucible_pcre2)
#endif
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <nlohmann/json.hpp>

namespace crucible::policies {
namespace {

using json = nlohmann::json;

// ---- UTF-8 -----------------------------------------------------------------------------------------------

/// The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, surrogates or code points past
/// U+10FFFF), or 0 where the byte starts none; `cp` gets the code point.
size_t utf8_sequence(const unsigned char* s, size_t n, uint32_t& cp) {
  const unsigned c = s[0];
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t len;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// The code point that ends at `end` (exclusive) in s, and its length; 0 where the bytes before are no
/// well-formed sequence.
size_t utf8_sequence_before(std::string_view s, size_t end, uint32_t& cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t len = 1; len <= 4 && len <= end; ++len)
    if (utf8_sequence(p + end - len, len, cp) == len) return len;
  return 0;
}

bool is_unicode_space(uint32_t cp) {
  return u_isUWhiteSpace(static_cast<UChar32>(cp));
}

/// Rust's char::is_alphanumeric (Alphabetic or a number), which `tokenizers` uses for single_word.
bool is_word_char(uint32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  if (u_isUAlphabetic(c)) return true;
  const auto t = u_charType(c);
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

// ---- GPT-2's byte-level alphabet
// ---------------------------------------------------------------------------

/// bytes_to_unicode(): printable Latin-1 bytes stand for themselves; the others (controls, space, 0x7F-0xA0,
/// 0xAD) are moved, in order, to U+0100 and up.
struct byte_alphabet {
  std::array<uint32_t, 256> code_point{};
  std::array<std::string, 256> spelling;
  std::unordered_map<uint32_t, unsigned char> byte_of;

  byte_alphabet() {
    auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174); };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) code_point[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
    for (int b = 0; b < 256; ++b) {
      append_utf8(spelling[b], code_point[b]);
      byte_of[code_point[b]] = static_cast<unsigned char>(b);
    }
  }
};

const byte_alphabet& alphabet() {
  static const byte_alphabet a;
  return a;
}

// ---- PCRE2
// ---------------------------------------------------------------------------------------------------

/// A compiled split pattern (UTF + UCP, JIT where the platform has it). Invalid UTF-8 in the subject never
/// matches, so such bytes end up in the gaps between matches, isolated as pieces of their own.
class split_regex {
 public:
  static expected<std::shared_ptr<split_regex>> compile(const std::string& pattern, bool literal) {
    int code = 0;
    PCRE2_SIZE offset = 0;
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    options |= literal ? PCRE2_LITERAL : PCRE2_UCP;  // PCRE2_LITERAL admits no PCRE2_UCP
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                                   &code, &offset, nullptr);
    if (!re) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(code, buf, sizeof buf);
      return make_error("the pattern '" + pattern + "' does not compile (PCRE2: " +
                        reinterpret_cast<const char*>(buf) + ", at offset " + std::to_string(offset) + ")");
    }
    auto r = std::shared_ptr<split_regex>(new split_regex(re));
    r->jit_ = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    return r;
  }
  ~split_regex() { pcre2_code_free(re_); }
  split_regex(const split_regex&) = delete;
  split_regex& operator=(const split_regex&) = delete;

  /// Splits s into its matches and the non-empty gaps between them, in order (`tokenizers`' Split with
  /// behavior Isolated).
  void split(std::string_view s, std::vector<std::string>& out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re_, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    size_t last = 0, start = 0;
    uint32_t flags = 0;
    while (start <= s.size()) {
      int rc = pcre2_match(re_, subject, s.size(), start, flags, md, nullptr);
      if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && jit_ && !(flags & PCRE2_NO_JIT)) {
        flags |= PCRE2_NO_JIT;  // a JIT stack limit: the interpreter keeps its frames on the heap
        continue;
      }
      if (rc < 0) break;  // no further match (or a match limit): the rest is one gap
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t b = ov[0], e = ov[1];
      if (e == b) {  // an empty match isolates nothing; step over one character
        start = b + 1;
        while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
        continue;
      }
      if (b > last) out.emplace_back(s.substr(last, b - last));
      out.emplace_back(s.substr(b, e - b));
      last = start = e;
    }
    if (last < s.size()) out.emplace_back(s.substr(last));
    pcre2_match_data_free(md);
  }

 private:
  explicit split_regex(pcre2_code* re) : re_(re) {}
  pcre2_code* re_;
  bool jit_ = false;
};

/// GPT-2's pattern, which ByteLevel with use_regex applies.
const char* gpt2_pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ---- NFC
// ------------------------------------------------------------------------------------------------------

/// NFC over the well-formed runs of s; bytes that are not UTF-8 are kept as they are.
std::string nfc(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(s);
  UErrorCode ec = U_ZERO_ERROR;
  const icu::Normalizer2* n2 = icu::Normalizer2::getNFCInstance(ec);
  if (U_FAILURE(ec)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  auto normalize_run = [&](std::string_view run) {
    if (run.empty()) return;
    UErrorCode e = U_ZERO_ERROR;
    const icu::StringPiece sp(run.data(), static_cast<int32_t>(run.size()));
    if (run.size() < INT32_MAX && !(n2->isNormalizedUTF8(sp, e) && U_SUCCESS(e))) {
      std::string norm;
      icu::StringByteSink<std::string> sink(&norm);
      e = U_ZERO_ERROR;
      n2->normalizeUTF8(0, sp, sink, nullptr, e);
      if (U_SUCCESS(e)) {
        out += norm;
        return;
      }
    }
    out.append(run);
  };
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t run_start = 0;
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence(p + i, s.size() - i, cp);
    if (len) {
      i += len;
      continue;
    }
    normalize_run(s.substr(run_start, i - run_start));
    out += s[i];
    run_start = ++i;
  }
  normalize_run(s.substr(run_start));
  return out;
}

// ---- tokenizer.json pieces
// -------------------------------------------------------------------------------------

struct added_token {
  int64_t id = 0;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

/// One step of the pre-tokenizer: a Split (isolating the pattern's matches) or the ByteLevel step (an
/// optional prefix space, an optional GPT-2 split; the byte mapping itself happens in the model).
struct pre_step {
  bool byte_level = false;
  bool add_prefix_space = false;
  std::shared_ptr<split_regex> re;  // null for a ByteLevel step without use_regex
};

/// Added tokens matched leftmost-longest, as `tokenizers` matches them (an Aho-Corasick automaton there; a
/// first-byte index here: there are few added tokens and they share few first bytes).
struct added_matcher {
  std::array<std::vector<const added_token*>, 256> by_first_byte;  // longest first

  void build(const std::vector<added_token>& tokens, bool normalized) {
    for (const auto& t : tokens)
      if (t.normalized == normalized) by_first_byte[static_cast<unsigned char>(t.content[0])].push_back(&t);
    for (auto& v : by_first_byte)
      std::stable_sort(v.begin(), v.end(), [](const added_token* a, const added_token* b) {
        return a->content.size() > b->content.size();
      });
  }

  /// Calls on_text for the text between matches and on_token for each match. lstrip / rstrip take the
  /// whitespace beside the token into it; single_word rejects a match inside a word.
  template <class Text, class Token>
  void split(std::string_view s, bool parse_special, Text&& on_text, Token&& on_token) const {
    size_t text_start = 0;  // where the pending text begins
    for (size_t i = 0; i < s.size();) {
      const auto& cands = by_first_byte[static_cast<unsigned char>(s[i])];
      const added_token* hit = nullptr;
      for (const added_token* t : cands) {
        if (t->special && !parse_special) continue;
        if (t->content.size() > s.size() - i ||
            std::memcmp(s.data() + i, t->content.data(), t->content.size()))
          continue;
        if (t->single_word) {
          uint32_t cp;
          const size_t end = i + t->content.size();
          const auto* p = reinterpret_cast<const unsigned char*>(s.data());
          if (i > 0 && utf8_sequence_before(s, i, cp) && is_word_char(cp)) continue;
          if (end < s.size() && utf8_sequence(p + end, s.size() - end, cp) && is_word_char(cp)) continue;
        }
        hit = t;
        break;
      }
      if (!hit) {
        ++i;
        continue;
      }
      size_t b = i, e = i + hit->content.size();
      uint32_t cp;
      if (hit->lstrip)
        while (b > text_start) {
          const size_t len = utf8_sequence_before(s, b, cp);
          if (!len || !is_unicode_space(cp)) break;
          b -= len;
        }
      if (hit->rstrip)
        while (e < s.size()) {
          const size_t len =
              utf8_sequence(reinterpret_cast<const unsigned char*>(s.data()) + e, s.size() - e, cp);
          if (!len || !is_unicode_space(cp)) break;
          e += len;
        }
      if (b > text_start) on_text(s.substr(text_start, b - text_start));
      on_token(hit->id);
      i = text_start = e;
    }
    if (text_start < s.size()) on_text(s.substr(text_start));
  }
};

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

// ---- the tokenizer
// ------------------------------------------------------------------------------------------

struct bpe_tokenizer::impl {
  bool nfc = false;
  std::vector<pre_step> steps;
  bool ignore_merges = false;
  int32_t unk_id = -1;
  std::string unk_token;  // "" for none

  std::unordered_map<std::string, int32_t> vocab;      // byte-level spelling -> id
  std::unordered_map<std::string, int32_t> raw_vocab;  // the bytes it stands for -> id (ignore_merges)
  std::vector<std::string> id_spelling;                // id -> spelling ("" where no vocab token)
  std::vector<std::string> id_bytes;                   // id -> bytes
  std::vector<char> id_in_vocab;
  std::array<int32_t, 256> byte_id{};  // -1 where the vocab lacks the byte's token

  struct merge_target {
    int32_t rank, id;
  };
  std::unordered_map<uint64_t, merge_target> merges;
  std::vector<std::pair<int32_t, int32_t>> merge_list;  // by rank, for to_json

  std::vector<added_token> added;  // by id
  std::unordered_map<std::string, size_t> added_by_content;
  std::unordered_map<int64_t, size_t> added_by_id;
  added_matcher raw_matcher, normalized_matcher;

  // Kept as read, for to_json.
  json normalizer, pre_tokenizer, post_processor, decoder;
  int64_t size = 0;

  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;
  static constexpr size_t cache_limit = 1 << 17, cacheable_length = 256;

  void bpe(const std::string& piece, std::vector<int64_t>& out) const;
  void merge_word(const std::string& piece, std::vector<int32_t>& ids) const;
  void encode_text(std::string_view text, std::vector<int64_t>& out) const;
  void pre_tokenize_text(std::string_view text, std::vector<std::string>& pieces) const;
  template <class Text, class Token>
  void split_added(const std::string& text, bool parse_special, Text&& on_text, Token&& on_token) const;
};

/// Merges the piece's bytes by rank, lowest first and leftmost among equals (a heap over candidate pairs,
/// with stale entries skipped): what `tokenizers` and GPT-2's bpe() compute.
void bpe_tokenizer::impl::merge_word(const std::string& piece, std::vector<int32_t>& ids) const {
  const size_t n = piece.size();
  std::vector<int32_t> id(n), prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (size_t i = 0; i < n; ++i) {
    id[i] = byte_id[static_cast<unsigned char>(piece[i])];
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  using entry = std::pair<int32_t, int32_t>;  // (rank, position)
  std::vector<entry> heap;
  auto push = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0 || id[pos] < 0 || id[next[pos]] < 0) return;
    auto it = merges.find(pair_key(id[pos], id[next[pos]]));
    if (it == merges.end()) return;
    heap.emplace_back(it->second.rank, pos);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const auto [rank, pos] = heap.back();
    heap.pop_back();
    if (!alive[pos] || next[pos] < 0) continue;
    const int32_t nx = next[pos];
    auto it = merges.find(pair_key(id[pos], id[nx]));
    if (it == merges.end() || it->second.rank != rank) continue;  // stale: a neighbour merged first
    id[pos] = it->second.id;
    alive[nx] = 0;
    next[pos] = next[nx];
    if (next[nx] >= 0) prev[next[nx]] = pos;
    push(prev[pos]);
    push(pos);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!alive[i]) continue;
    if (id[i] >= 0) {
      ids.push_back(id[i]);
    } else if (unk_id >= 0) {
      ids.push_back(unk_id);  // a byte the vocab lacks (never so in GPT-2, Qwen or Llama 3)
    }
  }
}

void bpe_tokenizer::impl::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges) {
    auto it = raw_vocab.find(piece);
    if (it != raw_vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() < cacheable_length;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu);
    auto it = cache.find(piece);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(piece, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu);
    if (cache.size() >= cache_limit) cache.clear();
    cache.emplace(piece, std::move(ids));
  }
}

void bpe_tokenizer::impl::pre_tokenize_text(std::string_view text, std::vector<std::string>& pieces) const {
  std::vector<std::string> cur{std::string(text)}, nxt;
  for (const auto& step : steps) {
    nxt.clear();
    for (auto& p : cur) {
      if (step.byte_level && step.add_prefix_space && (p.empty() || p[0] != ' ')) p.insert(p.begin(), ' ');
      if (step.re) {
        step.re->split(p, nxt);
      } else {
        nxt.push_back(std::move(p));
      }
    }
    std::swap(cur, nxt);
  }
  for (auto& p : cur)
    if (!p.empty()) pieces.push_back(std::move(p));
}

void bpe_tokenizer::impl::encode_text(std::string_view text, std::vector<int64_t>& out) const {
  std::vector<std::string> pieces;
  pre_tokenize_text(text, pieces);
  for (const auto& p : pieces) bpe(p, out);
}

/// Added tokens that match the raw text are split off first; the rest is normalized, then the added tokens
/// marked `normalized` are matched on the normalized text (`tokenizers`' order).
template <class Text, class Token>
void bpe_tokenizer::impl::split_added(const std::string& text, bool parse_special, Text&& on_text,
                                      Token&& on_token) const {
  raw_matcher.split(
      text, parse_special,
      [&](std::string_view seg) {
        const std::string norm = nfc ? policies::nfc(seg) : std::string(seg);
        normalized_matcher.split(norm, parse_special, on_text, on_token);
      },
      on_token);
}

bpe_tokenizer::bpe_tokenizer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
bpe_tokenizer::bpe_tokenizer(bpe_tokenizer&&) noexcept = default;
bpe_tokenizer& bpe_tokenizer::operator=(bpe_tokenizer&&) noexcept = default;
bpe_tokenizer::~bpe_tokenizer() = default;

std::vector<int64_t> bpe_tokenizer::encode(const std::string& text, bool parse_special) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 1);
  impl_->split_added(
      text, parse_special, [&](std::string_view seg) { impl_->encode_text(seg, out); },
      [&](int64_t id) { out.push_back(id); });
  return out;
}

std::vector<std::string> bpe_tokenizer::pre_tokenize(const std::string& text, bool parse_special) const {
  std::vector<std::string> pieces;
  impl_->split_added(
      text, parse_special, [&](std::string_view seg) { impl_->pre_tokenize_text(seg, pieces); },
      [](int64_t) {});
  return pieces;
}

std::string bpe_tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  std::string out;
  for (int64_t id : ids) {
    auto a = impl_->added_by_id.find(id);
    if (a != impl_->added_by_id.end()) {
      const auto& t = impl_->added[a->second];
      if (!(skip_special && t.special)) out += t.content;
      continue;
    }
    if (id >= 0 && id < static_cast<int64_t>(impl_->id_bytes.size()) && impl_->id_in_vocab[id])
      out += impl_->id_bytes[id];
  }
  return out;
}

int64_t bpe_tokenizer::vocab_size() const {
  return impl_->size;
}

std::optional<int64_t> bpe_tokenizer::token_id(const std::string& token) const {
  auto a = impl_->added_by_content.find(token);
  if (a != impl_->added_by_content.end()) return impl_->added[a->second].id;
  auto v = impl_->vocab.find(token);
  if (v != impl_->vocab.end()) return v->second;
  return std::nullopt;
}

std::string bpe_tokenizer::token_text(int64_t id) const {
  auto a = impl_->added_by_id.find(id);
  if (a != impl_->added_by_id.end()) return impl_->added[a->second].content;
  if (id >= 0 && id < static_cast<int64_t>(impl_->id_spelling.size())) return impl_->id_spelling[id];
  return {};
}

bool bpe_tokenizer::is_special(int64_t id) const {
  auto a = impl_->added_by_id.find(id);
  return a != impl_->added_by_id.end() && impl_->added[a->second].special;
}

// ---- reading tokenizer.json
// ---------------------------------------------------------------------------------

namespace {

std::string type_of(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return "";
  return j["type"].get<std::string>();
}

bool flag(const json& j, const char* key, bool fallback) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

status read_steps(const json& j, const std::string& where, std::vector<pre_step>& steps) {
  const std::string type = type_of(j);
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      return make_error(where + ".pretokenizers: expected an array");
    for (size_t i = 0; i < j["pretokenizers"].size(); ++i)
      if (auto st =
              read_steps(j["pretokenizers"][i], where + ".pretokenizers[" + std::to_string(i) + "]", steps);
          !st)
        return st;
    return {};
  }
  if (type == "ByteLevel") {
    pre_step s;
    s.byte_level = true;
    s.add_prefix_space = flag(j, "add_prefix_space", true);  // `tokenizers`' defaults
    if (flag(j, "use_regex", true)) {
      auto re = split_regex::compile(gpt2_pattern, false);
      if (!re) return make_error(where + ": " + re.message());
      s.re = *re;
    }
    steps.push_back(std::move(s));
    return {};
  }
  if (type == "Split") {
    const json& pat = j.contains("pattern") ? j["pattern"] : json();
    std::string text;
    bool literal;
    if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string()) {
      text = pat["Regex"].get<std::string>(), literal = false;
    } else if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
      text = pat["String"].get<std::string>(), literal = true;
    } else {
      return make_error(where + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    }
    const std::string behavior =
        j.contains("behavior") && j["behavior"].is_string() ? j["behavior"].get<std::string>() : "";
    if (behavior != "Isolated")
      return make_error(where + ".behavior '" + behavior + "' is not supported (Isolated)");
    if (flag(j, "invert", false)) return make_error(where + ".invert: an inverted split is not supported");
    auto re = split_regex::compile(text, literal);
    if (!re) return make_error(where + ": " + re.message());
    pre_step s;
    s.re = *re;
    steps.push_back(std::move(s));
    return {};
  }
  return make_error(where + ": type '" + (type.empty() ? j.dump() : type) +
                    "' is not supported (ByteLevel, Split with a pattern, or a Sequence of them)");
}

}  // namespace

expected<bpe_tokenizer> bpe_tokenizer::parse_from(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    return make_error(origin + ": not JSON: " + e.what());
  }
  if (!j.is_object()) return make_error(origin + ": expected a JSON object");
  auto m = std::make_unique<bpe_tokenizer::impl>();
  const auto& a = alphabet();

  // The model.
  if (!j.contains("model") || !j["model"].is_object()) return make_error(origin + ": model is missing");
  const json& model = j["model"];
  const std::string model_type = type_of(model);
  if (!model_type.empty() && model_type != "BPE")
    return make_error(origin + ": model.type '" + model_type + "' is not supported; byte-level BPE only");
  if (model_type.empty() && !model.contains("merges"))
    return make_error(origin + ": model.type is missing (and no merges: not a BPE model)");
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0))
    return make_error(origin + ": model.dropout " + model["dropout"].dump() + " is not supported (null)");
  if (flag(model, "byte_fallback", false))
    return make_error(
        origin + ": model.byte_fallback (SentencePiece-style BPE) is not supported; byte-level BPE only");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() &&
        !(model[key].is_string() && model[key].get<std::string>().empty()))
      return make_error(origin + ": model." + key + " " + model[key].dump() + " is not supported (empty)");
  m->ignore_merges = flag(model, "ignore_merges", false);

  if (!model.contains("vocab") || !model["vocab"].is_object())
    return make_error(origin + ": model.vocab is missing or not an object");
  int64_t max_id = -1;
  for (const auto& [tok, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      return make_error(origin + ": model.vocab['" + tok + "']: expected an id >= 0, got " + id.dump());
    max_id = std::max(max_id, id.get<int64_t>());
  }
  m->id_spelling.assign(max_id + 1, "");
  m->id_bytes.assign(max_id + 1, "");
  m->id_in_vocab.assign(max_id + 1, 0);
  for (const auto& [tok, idj] : model["vocab"].items()) {
    const auto id = static_cast<int32_t>(idj.get<int64_t>());
    if (m->id_in_vocab[id])
      return make_error(origin + ": model.vocab: '" + m->id_spelling[id] + "' and '" + tok +
                        "' share the id " + std::to_string(id));
    m->id_in_vocab[id] = 1;
    m->id_spelling[id] = tok;
    m->id_bytes[id] = byte_level_bytes(tok);
    m->vocab.emplace(tok, id);
    m->raw_vocab.emplace(m->id_bytes[id], id);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = m->vocab.find(a.spelling[b]);
    m->byte_id[b] = it == m->vocab.end() ? -1 : it->second;
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    m->unk_token = model["unk_token"].get<std::string>();
    auto it = m->vocab.find(m->unk_token);
    if (it != m->vocab.end()) m->unk_id = it->second;
  }

  if (!model.contains("merges") || !model["merges"].is_array())
    return make_error(origin + ": model.merges is missing or not an array");
  const json& merges = model["merges"];
  m->merges.reserve(merges.size());
  m->merge_list.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const json& e = merges[r];
    std::string left, right;
    const std::string where = origin + ": model.merges[" + std::to_string(r) + "]";
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        return make_error(where + ": '" + s + "' is not two tokens separated by one space");
      left = s.substr(0, sp), right = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      left = e[0].get<std::string>(), right = e[1].get<std::string>();
    } else {
      return make_error(where + ": expected \"a b\" or [\"a\", \"b\"], got " + e.dump());
    }
    auto l = m->vocab.find(left), rt = m->vocab.find(right), merged = m->vocab.find(left + right);
    if (l == m->vocab.end() || rt == m->vocab.end())
      return make_error(where + ": '" + (l == m->vocab.end() ? left : right) + "' is not in model.vocab");
    if (merged == m->vocab.end())
      return make_error(where + ": the merged token '" + left + right + "' is not in model.vocab");
    // As in `tokenizers`, a pair listed twice takes its later rank.
    m->merges[pair_key(l->second, rt->second)] = {static_cast<int32_t>(r), merged->second};
    m->merge_list.emplace_back(l->second, rt->second);
  }

  // Added tokens.
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    if (!j["added_tokens"].is_array()) return make_error(origin + ": added_tokens: expected an array");
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& e = j["added_tokens"][i];
      const std::string where = origin + ": added_tokens[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() || e["id"].get<int64_t>() < 0 ||
          e["id"].get<int64_t>() > INT32_MAX)
        return make_error(where + ": expected an object with an id >= 0");
      if (!e.contains("content") || !e["content"].is_string() || e["content"].get<std::string>().empty())
        return make_error(where + ": content is missing or empty");
      added_token t;
      t.id = e["id"].get<int64_t>();
      t.content = e["content"].get<std::string>();
      t.single_word = flag(e, "single_word", false);
      t.lstrip = flag(e, "lstrip", false);
      t.rstrip = flag(e, "rstrip", false);
      t.special = flag(e, "special", false);
      t.normalized = flag(e, "normalized", !t.special);
      if (m->added_by_content.count(t.content))
        return make_error(where + ": '" + t.content + "' is listed twice");
      m->added_by_content[t.content] = m->added.size();
      m->added.push_back(std::move(t));
    }
  }
  std::sort(m->added.begin(), m->added.end(),
            [](const added_token& x, const added_token& y) { return x.id < y.id; });
  for (size_t i = 0; i < m->added.size(); ++i) {
    if (i > 0 && m->added[i].id == m->added[i - 1].id)
      return make_error(origin + ": added_tokens: '" + m->added[i - 1].content + "' and '" +
                        m->added[i].content + "' share the id " + std::to_string(m->added[i].id));
    m->added_by_content[m->added[i].content] = i;
    m->added_by_id[m->added[i].id] = i;
    max_id = std::max(max_id, m->added[i].id);
  }
  m->raw_matcher.build(m->added, false);
  m->normalized_matcher.build(m->added, true);
  m->size = max_id + 1;

  // Normalizer: none or NFC (alone or in a Sequence).
  m->normalizer = j.contains("normalizer") ? j["normalizer"] : json();
  if (!m->normalizer.is_null()) {
    std::vector<json> parts;
    if (type_of(m->normalizer) == "Sequence") {
      if (!m->normalizer.contains("normalizers") || !m->normalizer["normalizers"].is_array())
        return make_error(origin + ": normalizer.normalizers: expected an array");
      for (const auto& n : m->normalizer["normalizers"]) parts.push_back(n);
    } else {
      parts.push_back(m->normalizer);
    }
    for (const auto& n : parts) {
      if (type_of(n) != "NFC")
        return make_error(origin + ": normalizer type '" + (type_of(n).empty() ? n.dump() : type_of(n)) +
                          "' is not supported (NFC or none)");
      m->nfc = true;
    }
  }

  // Pre-tokenizer: ends in the one ByteLevel step.
  m->pre_tokenizer = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : json();
  if (m->pre_tokenizer.is_null())
    return make_error(origin + ": pre_tokenizer is missing; byte-level BPE needs a ByteLevel pre-tokenizer");
  if (auto st = read_steps(m->pre_tokenizer, origin + ": pre_tokenizer", m->steps); !st) return st.err();
  const auto byte_steps =
      std::count_if(m->steps.begin(), m->steps.end(), [](const pre_step& s) { return s.byte_level; });
  if (byte_steps != 1 || !m->steps.back().byte_level)
    return make_error(origin + ": pre_tokenizer: expected one ByteLevel step, last (byte-level BPE only)");

  m->decoder = j.contains("decoder") ? j["decoder"] : json();
  if (type_of(m->decoder) != "ByteLevel")
    return make_error(
        origin + ": decoder " +
        (type_of(m->decoder).empty() ? m->decoder.dump() : "type '" + type_of(m->decoder) + "'") +
        " is not supported (ByteLevel)");
  m->post_processor = j.contains("post_processor") ? j["post_processor"] : json();
  return bpe_tokenizer(std::move(m));
}

expected<bpe_tokenizer> bpe_tokenizer::parse(const std::string& tokenizer_json_text) {
  return parse_from(tokenizer_json_text, "tokenizer.json");
}

expected<bpe_tokenizer> bpe_tokenizer::load(const std::string& tokenizer_json_path) {
  std::ifstream in(tokenizer_json_path, std::ios::binary);
  if (!in) return make_error("cannot read '" + tokenizer_json_path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_from(ss.str(), tokenizer_json_path);
}

// ---- writing tokenizer.json
// -----------------------------------------------------------------------------------

std::string bpe_tokenizer::to_json() const {
  const impl& m = *impl_;
  auto q = [](const std::string& s) { return json(s).dump(); };
  auto b = [](bool v) { return v ? "true" : "false"; };
  std::string o;
  o.reserve(64 * (m.vocab.size() + m.merge_list.size()) + 4096);
  o += "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [";
  for (size_t i = 0; i < m.added.size(); ++i) {
    const auto& t = m.added[i];
    o += i ? ",\n    " : "\n    ";
    o += "{\"id\": " + std::to_string(t.id) + ", \"content\": " + q(t.content) +
         ", \"single_word\": " + b(t.single_word) + ", \"lstrip\": " + b(t.lstrip) +
         ", \"rstrip\": " + b(t.rstrip) + ", \"normalized\": " + b(t.normalized) +
         ", \"special\": " + b(t.special) + "}";
  }
  o += m.added.empty() ? "],\n" : "\n  ],\n";
  o += "  \"normalizer\": " + m.normalizer.dump() + ",\n";
  o += "  \"pre_tokenizer\": " + m.pre_tokenizer.dump() + ",\n";
  o += "  \"post_processor\": " + m.post_processor.dump() + ",\n";
  o += "  \"decoder\": " + m.decoder.dump() + ",\n";
  o += "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": ";
  o += m.unk_token.empty() ? "null" : q(m.unk_token);
  o += ",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": "
       "false,\n"
       "    \"byte_fallback\": false,\n";
  // Written only when set: `tokenizers` before 0.19 rejects the key.
  if (m.ignore_merges) o += "    \"ignore_merges\": true,\n";
  o += "    \"vocab\": {";
  bool first = true;
  for (size_t id = 0; id < m.id_spelling.size(); ++id) {
    if (!m.id_in_vocab[id]) continue;
    o += first ? "\n      " : ",\n      ";
    first = false;
    o += q(m.id_spelling[id]) + ": " + std::to_string(id);
  }
  o += "\n    },\n    \"merges\": [";
  bool spaces = false;  // the "a b" form cannot hold a token with a space; `tokenizers` >= 0.20 reads pairs
  for (const auto& [l, r] : m.merge_list)
    spaces = spaces || m.id_spelling[l].find(' ') != std::string::npos ||
             m.id_spelling[r].find(' ') != std::string::npos;
  for (size_t i = 0; i < m.merge_list.size(); ++i) {
    const auto& [l, r] = m.merge_list[i];
    o += i ? ",\n      " : "\n      ";
    if (spaces) {
      o += "[" + q(m.id_spelling[l]) + ", " + q(m.id_spelling[r]) + "]";
    } else {
      o += q(m.id_spelling[l] + " " + m.id_spelling[r]);
    }
  }
  o += m.merge_list.empty() ? "]\n  }\n}\n" : "\n    ]\n  }\n}\n";
  return o;
}

status bpe_tokenizer::save(const std::string& path) const {
  const std::string text = to_json();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error("cannot write '" + path + "'");
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return make_error("cannot write '" + path + "' (disk full?)");
  return {};
}

// ---- the byte-level alphabet
// ----------------------------------------------------------------------------------

std::string byte_level_spelling(std::string_view bytes) {
  const auto& a = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += a.spelling[static_cast<unsigned char>(c)];
  return out;
}

std::string byte_level_bytes(std::string_view spelling) {
  const auto& a = alphabet();
  const auto* p = reinterpret_cast<const unsigned char*>(spelling.data());
  std::string out;
  out.reserve(spelling.size());
  uint32_t cp;
  for (size_t i = 0; i < spelling.size();) {
    const size_t len = utf8_sequence(p + i, spelling.size() - i, cp);
    if (!len) {
      out += spelling[i++];
      continue;
    }
    auto it = a.byte_of.find(cp);
    if (it != a.byte_of.end()) {
      out += static_cast<char>(it->second);
    } else {
      out.append(spelling.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace crucible::policies
