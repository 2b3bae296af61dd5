#include "policies/lm/bpe_trainer.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "tests/policies/lm/tokenizer_vectors.hpp"

namespace crucible::policies {
namespace {

namespace fs = std::filesystem;

bool is_source(const fs::path& p) {
  const auto e = p.extension().string();
  return e == ".cpp" || e == ".hpp" || e == ".h" || e == ".cu" || e == ".cuh";
}

void add_sources(const fs::path& root, size_t limit, std::vector<std::string>& corpus, size_t& bytes) {
  if (!fs::is_directory(root)) return;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator(); ++it) {
    const auto name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name[0] == '.')) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_source(it->path())) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (bytes >= limit) return;
    corpus.push_back(test::read_text(f.string()));
    bytes += corpus.back().size();
  }
}

/// About `limit` bytes of C++: this repository's sources, then libstdc++'s headers (there wherever the
/// tests were compiled).
std::vector<std::string> code_corpus(size_t limit, size_t& bytes) {
  std::vector<std::string> corpus;
  bytes = 0;
  add_sources(fs::path(CRUCIBLE_TEST_DATA_DIR) / ".." / "..", limit, corpus, bytes);
  for (const char* dir :
       {"/usr/include/c++/12", "/usr/include/c++/13", "/usr/include/c++/14", "/usr/include/c++"})
    if (fs::is_directory(dir)) {
      add_sources(dir, limit, corpus, bytes);
      break;
    }
  return corpus;
}

bpe_tokenizer must(expected<bpe_tokenizer> r) {
  if (!r) throw std::runtime_error(r.message());
  return std::move(*r);
}

TEST(BpeTrainer, MergesTheMostFrequentPairFirstAndBreaksTiesByIds) {
  // Pre-tokens: "ab" once, " ab" twice, " cd" once. Pairs: a b (3), ' ' a (2), ' ' c (1), c d (1).
  const std::vector<std::string> corpus = {"ab ab ab cd"};
  bpe_training_options o;
  o.min_frequency = 1;
  o.vocab_size = 259;
  auto t = must(train_bpe(corpus, o));
  EXPECT_EQ(t.vocab_size(), 259);
  EXPECT_EQ(t.token_text(256), "ab");
  EXPECT_EQ(t.token_text(257),
            "\xC4\xA0"
            "ab");  // Ġab: then ' ' ab (2)
  EXPECT_EQ(t.token_text(258),
            "\xC4\xA0"
            "c");  // ' ' c and c d tie at 1: ' ' (32) < c (99)
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(t.token_text(b), byte_level_spelling(std::string(1, static_cast<char>(b))));
  EXPECT_EQ(t.encode(" ab"), (std::vector<int64_t>{257}));
  EXPECT_EQ(t.encode("ab cd"), (std::vector<int64_t>{256, 258, 'd'}));
}

TEST(BpeTrainer, MinFrequencyStopsTrainingEarly) {
  const std::vector<std::string> corpus = {"ab ab ab cd"};
  bpe_training_options o;
  o.vocab_size = 1000;
  o.min_frequency = 2;  // a b (3) and ' ' ab (2) qualify; nothing else does
  o.special_tokens = {"<|endoftext|>"};
  auto t = must(train_bpe(corpus, o));
  EXPECT_EQ(t.vocab_size(), 259);  // 256 bytes, 2 merges, 1 special
  EXPECT_EQ(t.token_id("<|endoftext|>"), 258);
  EXPECT_TRUE(t.is_special(258));
}

TEST(BpeTrainer, BadOptionsAreErrors) {
  bpe_training_options o;
  o.vocab_size = 257;
  o.special_tokens = {"<a>", "<b>"};
  auto small = train_bpe({"x"}, o);
  ASSERT_FALSE(small);
  EXPECT_EQ(small.message(), "train_bpe: vocab_size 257 is below the 256 byte tokens + 2 special tokens");
  o.vocab_size = 300;
  o.special_tokens = {"<a>", "<a>"};
  EXPECT_NE(train_bpe({"x"}, o).message().find("'<a>' is listed twice"), std::string::npos);
  o.special_tokens = {""};
  EXPECT_NE(train_bpe({"x"}, o).message().find("a special token is empty"), std::string::npos);
  o.special_tokens = {"<\xFF>"};
  EXPECT_NE(train_bpe({"x"}, o).message().find("is not UTF-8"), std::string::npos);
  o.special_tokens = {};
  o.min_frequency = 0;
  EXPECT_NE(train_bpe({"x"}, o).message().find("min_frequency 0 must be at least 1"), std::string::npos);
}

TEST(BpeTrainer, EightThousandTokensFromFiveMegabytesOfCode) {
  size_t bytes = 0;
  const auto corpus = code_corpus(5'000'000, bytes);
  ASSERT_GE(bytes, 1'000'000u) << "too little C++ source found to train on";
  bpe_training_options o;
  o.vocab_size = 8192;
  o.special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  const auto start = std::chrono::steady_clock::now();
  auto trained = train_bpe(corpus, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(trained) << trained.message();
  const auto& t = *trained;
  std::cout << "[ trainer  ] " << o.vocab_size << " tokens from " << corpus.size() << " files, " << bytes
            << " bytes, in " << seconds << " s\n";
  EXPECT_LT(seconds, 60.0);
  EXPECT_EQ(t.vocab_size(), 8192);
  for (size_t i = 0; i < o.special_tokens.size(); ++i) {
    EXPECT_EQ(t.token_id(o.special_tokens[i]), 8192 - 3 + static_cast<int64_t>(i));
    EXPECT_TRUE(t.is_special(8192 - 3 + static_cast<int64_t>(i)));
  }
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(t.token_text(b), byte_level_spelling(std::string(1, static_cast<char>(b))));
  // Code compresses: common keywords are single tokens.
  for (const char* word : {"Ġreturn", "Ġconst", "include", "Ġstd"}) EXPECT_TRUE(t.token_id(word)) << word;

  size_t tokens = 0;
  for (size_t i = 0; i < corpus.size(); i += 7) {
    const auto ids = t.encode(corpus[i]);
    tokens += ids.size();
    ASSERT_EQ(t.decode(ids), corpus[i]) << "file " << i;
  }
  EXPECT_GT(tokens, 0u);
  const std::string held_out =
      "<|im_start|>user\n__global__ void scale(float* x, int n) { x[threadIdx.x] *= 2.0f; "
      "}<|im_end|>\n\xFF\xFE";
  const auto ids = t.encode(held_out);
  EXPECT_EQ(t.decode(ids), held_out);
  EXPECT_EQ(ids.front(), 8190);

  // Saved and loaded, it gives the same ids.
  const auto path =
      (fs::temp_directory_path() / ("crucible_trained_" + std::to_string(::getpid()) + ".json")).string();
  ASSERT_TRUE(t.save(path));
  auto back = bpe_tokenizer::load(path);
  fs::remove(path);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->vocab_size(), 8192);
  for (size_t i = 0; i < corpus.size(); i += 13)
    EXPECT_EQ(back->encode(corpus[i]), t.encode(corpus[i])) << "file " << i;
  EXPECT_EQ(back->encode(held_out), ids);
}

TEST(BpeTrainer, TrainingIsDeterministic) {
  size_t bytes = 0;
  const auto corpus = code_corpus(600'000, bytes);
  bpe_training_options o;
  o.vocab_size = 2000;
  o.special_tokens = {"<|endoftext|>"};
  const auto a = must(train_bpe(corpus, o)), b = must(train_bpe(corpus, o));
  EXPECT_EQ(a.to_json(), b.to_json());
  EXPECT_EQ(a.vocab_size(), 2000);
}

}  // namespace
}  // namespace crucible::policies
