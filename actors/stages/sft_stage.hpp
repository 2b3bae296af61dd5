#pragma once
// The sft stage's training (CUDA-L1 stage 1) after its corpus run: the correct kernels of the corpus (and a
// user's JSONL) become examples (policies/lm/sft_examples), a byte-level BPE is trained on their text, and a
// fresh model of sft.model's shape learns to answer each prompt with its kernel — or policy.lm.checkpoint's
// model is fine-tuned with its own tokenizer. Resumable: a checkpoint every sft.checkpoint_every steps
// (STAGE_DIR/train/), the model at the end in STAGE_DIR/model/ (a Hugging Face directory).
#include <cstdint>
#include <string>

#include "messages/expected.hpp"
#include "runtime/config/config.hpp"

namespace crucible::actors {

struct sft_outcome {
  std::string model_dir;
  int64_t sources = 0;           ///< distinct correct kernels
  int64_t examples = 0;          ///< trained examples
  int64_t skipped_too_long = 0;  ///< examples whose answer exceeds policy.lm.max_new_tokens
  int64_t steps = 0;
  int64_t vocab_size = 0;
  int64_t parameters = 0;
  double loss_first = 0.0, loss_last = 0.0;
  double wall_s = 0.0;
};

/// The error message of a training stopped by SIGINT or SIGTERM (checkpointed; resumable).
inline constexpr const char* sft_interrupted_note = "sft interrupted";

/// Trains on the passing candidates of `corpus_db` (a replay.sqlite; none when empty) and sft.jsonl's;
/// writes STAGE_DIR/metrics.jsonl (one line per step), STAGE_DIR/sft_sources.json (the normalised sources it
/// trained on, for the novelty measure) and the model.
expected<sft_outcome> run_sft_training(const runtime::config& cfg, const std::string& stage_dir,
                                       const std::string& corpus_db);

/// The normalised sources the sft stage trained on (sha256 of each), for novelty: empty when there is none.
std::vector<std::string> sft_source_hashes(const std::string& sft_stage_dir);

}  // namespace crucible::actors
