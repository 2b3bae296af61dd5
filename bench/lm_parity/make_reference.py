#!/usr/bin/env python3
"""Random tiny Qwen2 and Llama 3 models made with Hugging Face transformers, and their logits: the reference
bench/lm_parity_bench compares Crucible's decoder against (issue 13). Needs torch, transformers, safetensors;
no weights are downloaded. Then `check` loads the copies Crucible wrote back and compares them the other way.

  python3 bench/lm_parity/make_reference.py make OUT_DIR
  build/bench/lm_parity_bench OUT_DIR/qwen2 OUT_DIR/llama
  python3 bench/lm_parity/make_reference.py check OUT_DIR
"""
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

VOCAB, LENGTH = 1000, 96


def configs():
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  initializer_range=0.1)  # larger than the default, so logits differ by more than rounding
    return {
        "qwen2": transformers.Qwen2Config(rope_theta=1e6, tie_word_embeddings=True, rms_norm_eps=1e-6, **common),
        "llama": transformers.LlamaConfig(
            rope_theta=5e5, tie_word_embeddings=False, rms_norm_eps=1e-5, attention_bias=True,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 32},
            **common),
    }


def logits_of(model, ids):
    with torch.no_grad():
        return model(ids).logits.float().contiguous()


def make(out):
    for name, cfg in configs().items():
        torch.manual_seed(0)
        cfg._attn_implementation = "eager"
        model = transformers.AutoModelForCausalLM.from_config(cfg).float().eval()
        d = f"{out}/{name}"
        model.save_pretrained(d, safe_serialization=True)
        ids = torch.randint(0, VOCAB, (2, LENGTH))
        save_file({"input_ids": ids, "logits": logits_of(model, ids)}, f"{d}/reference.safetensors")
        print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters, transformers {transformers.__version__}")


def check(out):
    worst = 0.0
    for name in configs():
        ref = load_file(f"{out}/{name}/reference.safetensors")
        model = transformers.AutoModelForCausalLM.from_pretrained(f"{out}/{name}/crucible_copy",
                                                                  attn_implementation="eager").float().eval()
        diff = (logits_of(model, ref["input_ids"]) - ref["logits"]).abs().max().item()
        worst = max(worst, diff)
        print(f"{name}: Crucible's saved copy in transformers: max |logit difference| {diff:.3g}")
    sys.exit(0 if worst < 1e-4 else 1)


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
