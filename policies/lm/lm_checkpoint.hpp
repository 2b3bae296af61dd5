#pragma once
// Internal to policies/: a decoder LM checkpoint in Hugging Face's layout — config.json beside
// model.safetensors, or beside model.safetensors.index.json and its shards — loaded into a decoder_model
// with every name and shape checked (errors say which tensor), and written back in the same layout so other
// tools load a model Crucible trained. bf16, fp16 and fp32 files; the model's dtype is the caller's.
// Includes LibTorch: include only from .cpp files.
#include <string>

#include <torch/torch.h>

#include "messages/expected.hpp"
#include "policies/lm/decoder_model.hpp"
#include "policies/lm/safetensors.hpp"

namespace crucible::policies {

/// Loads DIR/config.json and its weights into a new model of `dtype` on `device`.
expected<decoder_model> load_lm_checkpoint(const std::string& dir, torch::Dtype dtype = torch::kFloat,
                                           const torch::Device& device = torch::kCPU);

/// Copies the weight files of DIR into an existing model of the same config (names and shapes checked).
status load_lm_weights(decoder_model& model, const std::string& dir);

/// The weights as one safetensors blob (fp32, checkpoint names) and back, for weights that travel between a
/// learner and its generators; loading checks every name and shape.
expected<std::string> lm_weights_bytes(decoder_model& model);
status load_lm_weights_bytes(decoder_model& model, const std::string& bytes);

/// Writes DIR/config.json and the weights as `dtype` (f32, f16 or bf16): one model.safetensors, or shards
/// of at most `max_shard_bytes` with model.safetensors.index.json when that is > 0 and the weights exceed it.
status save_lm_checkpoint(decoder_model& model, const std::string& dir,
                          tensor_dtype dtype = tensor_dtype::f32, int64_t max_shard_bytes = 0);

/// The torch dtype of a file dtype, and config.json's name of it ("bfloat16"); errors for non-float dtypes.
expected<torch::Dtype> torch_dtype_of(tensor_dtype d);
const char* config_dtype_name(tensor_dtype d);

}  // namespace crucible::policies
