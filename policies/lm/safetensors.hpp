#pragma once
// The safetensors format (Hugging Face's weight files): an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw little-endian data. Read and written here
// without LibTorch, with every offset and size checked, so a truncated or hostile file is an error naming
// the tensor, never a read past the end. Also the sharded layout's index (model.safetensors.index.json).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::policies {

enum class tensor_dtype { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

/// "F32", "BF16", ... (the format's names) and bytes per element: one table for both directions.
const char* dtype_name(tensor_dtype d);
int64_t dtype_size(tensor_dtype d);
expected<tensor_dtype> dtype_from_name(const std::string& name);

struct stored_tensor {
  std::string name;
  tensor_dtype dtype = tensor_dtype::f32;
  std::vector<int64_t> shape;
  std::vector<char> data;  ///< little-endian, row-major; size = product(shape) * dtype_size

  int64_t numel() const;
};

struct safetensors_file {
  std::vector<stored_tensor> tensors;           ///< in file order
  std::map<std::string, std::string> metadata;  ///< the header's __metadata__ (string to string)
};

/// The header is at most this large (the format's own bound); a larger length is a corrupt file.
constexpr uint64_t max_safetensors_header = 100u << 20;

expected<safetensors_file> read_safetensors(const std::string& path);
/// Parses a whole file's bytes (read_safetensors reads then calls this; tests feed it mutations).
expected<safetensors_file> parse_safetensors(const std::string& bytes, const std::string& origin);

/// A whole file's bytes (what write_safetensors writes): the in-memory form weights travel in.
expected<std::string> encode_safetensors(const safetensors_file& file);
/// Writes tensors (data packed in the given order, 8-byte aligned header as the reference writer pads it).
status write_safetensors(const std::string& path, const safetensors_file& file);

/// model.safetensors.index.json: which shard file holds each tensor.
expected<std::map<std::string, std::string>> read_safetensors_index(const std::string& path);
status write_safetensors_index(const std::string& path, const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size);

}  // namespace crucible::policies
