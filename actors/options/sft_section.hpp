#pragma once
// sft.*: CUDA-L1's first stage for the language model (actors/stages/sft_stage). Its data: the sources of a
// run the stage makes (corpus_steps learner steps, every candidate evaluated as in any run) by corpus_policy
// — the program policy, or a served model (policy.remote), as the paper's corpus came from existing models —
// those that pass, varied (renamed identifiers, reformatting, reordered helpers), contrastive examples (two
// earlier kernels with their speedups -> a faster one), and a user's JSONL of {"task", "code"} pairs. Then a
// byte-level BPE of vocab_size tokens and a fresh Qwen2-architecture model of the shape below, unless
// policy.lm.checkpoint names a model to fine-tune.
#include <cstdint>
#include <string>

namespace crucible::actors {

struct sft_section {
  static constexpr const char* section_name = "sft";
  // The corpus
  /// What writes the corpus: program (op-chain tasks), remote (the model at policy.remote), or none (only
  /// jsonl's kernels, e.g. those `crucible rejudge --sft-jsonl` found correct).
  std::string corpus_policy = "program";
  int64_t corpus_steps = 8;    ///< learner steps of the corpus run
  double corpus_minutes = 10;  ///< its time budget
  std::string jsonl;           ///< a user's {"task": NAME, "code": SOURCE} lines, added to the corpus
  int64_t variants = 2;        ///< varied copies of each passing source
  int64_t contrastive = 2;     ///< contrastive examples per passing source (when its task has slower ones)
  // The tokenizer and the model it trains from scratch
  int64_t vocab_size = 2048;
  int64_t hidden_size = 128;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t intermediate_size = 352;
  double rope_theta = 10000;
  // Training
  int64_t steps = 300;  ///< optimizer steps
  int64_t batch = 8;    ///< examples per step
  double lr = 1e-3;
  int64_t warmup_steps = 20;
  double max_minutes = 10;  ///< the training's time budget (it stops early, checkpointed)
  int64_t checkpoint_every = 50;
};

}  // namespace crucible::actors
