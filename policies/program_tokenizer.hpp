#pragma once
// The program policy's vocabulary and the encoding of its prompts and programs (DESIGN.md §7). The token
// ids are a fixed function of the op catalogue (kernels/task/op_catalog) and the program vocabulary of the
// target (kernels/program/program_space), so a checkpoint stays valid as long as neither changes; the
// fingerprint() lets a checkpoint detect that it did. No LibTorch here: the generator, the learner and the
// tests share it.
//
// Prompt: [BOS] [TASK] task tokens ([EXEMPLAR] bucket program tokens)* [PROGRAM]
// Program: for each decision its slot token, then its choice token ("slot=option").
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/program/program.hpp"
#include "messages/expected.hpp"
#include "messages/prompt.hpp"
#include "messages/task.hpp"

namespace crucible::policies {

/// One decision of a program as the learner sees it: where its choice token sits in the program token
/// sequence, which choice tokens were legal there (in the builder's option order) and which was taken.
struct decision_tokens {
  int32_t choice_index = 0;    ///< index into the program tokens of the choice token (slot is -1)
  std::vector<int32_t> legal;  ///< choice token ids of the legal options
  int32_t chosen = 0;          ///< index into `legal`
};

/// Thread contract: immutable after construction; every method is const and safe to call concurrently.
class program_tokenizer {
 public:
  /// Special token ids; they come first in the vocabulary and never move.
  static constexpr int32_t pad_id = 0;
  static constexpr int32_t bos_id = 1;
  static constexpr int32_t task_id = 2;
  static constexpr int32_t exemplar_id = 3;
  static constexpr int32_t program_id = 4;
  static constexpr int32_t end_id = 5;
  static constexpr int32_t unk_id = 6;
  static constexpr int32_t n_buckets = 8;  ///< speedup buckets 0..7 (the replay buffer's bucket index)

  /// The vocabulary for `target` ("cpu" | "cuda"): its program slots and choices come from
  /// kernels::vocabulary(target).
  explicit program_tokenizer(std::string_view target = "cpu");

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& target() const { return target_; }
  /// The id of a token string, -1 when it is not in the vocabulary.
  int32_t id(std::string_view token) const;
  /// The string of a token id ("<bad>" when out of range).
  const std::string& token(int32_t id) const;
  /// Ids of a slot ("rewrite:x") and of a choice ("rewrite:x=yes"); -1 when unknown.
  int32_t slot_id(std::string_view slot) const { return id(slot); }
  int32_t choice_id(std::string_view slot, std::string_view option) const;
  /// True for choice tokens ("slot=option").
  bool is_choice(int32_t id) const;
  /// The speedup-bucket token for bucket `b` (clamped to 0..n_buckets-1).
  int32_t bucket_token(int32_t b) const;
  /// A stable hash of every token string in order: equal fingerprints mean interchangeable token ids.
  uint64_t fingerprint() const { return fingerprint_; }

  /// The task description tokens (without [TASK]): the input's dtype, rank and size buckets, then per op
  /// its name, class, side-input kinds, scalar-attribute classes and the running shape when it changes.
  /// Unknown ops or a task whose shapes do not validate still encode (as <unk> and without shapes).
  std::vector<int32_t> encode_task(const task_spec& t) const;

  /// The program tokens of `p` on `t` (slot, choice per decision); an error if `p` is not in the task's
  /// space or a token is missing from the vocabulary.
  expected<std::vector<int32_t>> encode_program(const task_spec& t, const kernels::program& p) const;

  /// [EXEMPLAR] bucket program-tokens for one exemplar; empty when its program text does not parse or is
  /// not in the task's space (an exemplar never makes a prompt fail).
  std::vector<int32_t> encode_exemplar(const task_spec& t, const exemplar& e) const;

  /// The whole prompt, at most `max_tokens` long: exemplars are dropped from the back (the last one kept
  /// is cut short if that is enough) before the task description is cut; [BOS] [TASK] ... [PROGRAM] always
  /// stay. Errors only if max_tokens < 3.
  expected<std::vector<int32_t>> encode_prompt(const prompt& p, int32_t max_tokens) const;

  /// Replays program tokens through the task's program builder: the decisions with their legal choice
  /// tokens, and the finished program. Errors name the first token that is not the builder's next slot or
  /// not one of its options, or a sequence that ends early or runs past the end of the program.
  struct replay_result {
    std::vector<decision_tokens> decisions;
    kernels::program prog;
  };
  expected<replay_result> replay(const task_spec& t, const std::vector<int32_t>& program_tokens) const;

  /// Space-separated token strings (logs, debugging).
  std::string to_string(const std::vector<int32_t>& ids) const;

 private:
  int32_t add(std::string token);
  std::string target_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> index_;
  std::vector<bool> is_choice_;
  int32_t first_bucket_ = 0;
  uint64_t fingerprint_ = 0;
};

}  // namespace crucible::policies
