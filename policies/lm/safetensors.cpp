#include "policies/lm/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace crucible::policies {
namespace {

struct dtype_row {
  tensor_dtype dtype;
  const char* name;
  int64_t size;
};
constexpr dtype_row dtype_table[] = {
    {tensor_dtype::f32, "F32", 4},      {tensor_dtype::f16, "F16", 2}, {tensor_dtype::bf16, "BF16", 2},
    {tensor_dtype::f64, "F64", 8},      {tensor_dtype::i64, "I64", 8}, {tensor_dtype::i32, "I32", 4},
    {tensor_dtype::i16, "I16", 2},      {tensor_dtype::i8, "I8", 1},   {tensor_dtype::u8, "U8", 1},
    {tensor_dtype::boolean, "BOOL", 1},
};

const dtype_row& row_of(tensor_dtype d) {
  for (const auto& r : dtype_table)
    if (r.dtype == d) return r;
  return dtype_table[0];
}

expected<std::string> read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

const char* dtype_name(tensor_dtype d) {
  return row_of(d).name;
}
int64_t dtype_size(tensor_dtype d) {
  return row_of(d).size;
}

expected<tensor_dtype> dtype_from_name(const std::string& name) {
  for (const auto& r : dtype_table)
    if (name == r.name) return r.dtype;
  return make_error("dtype '" + name +
                    "' is not supported (F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
}

int64_t stored_tensor::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

expected<safetensors_file> parse_safetensors(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < 8) return make_error(origin + ": shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  if (header_len > max_safetensors_header || header_len > bytes.size() - 8)
    return make_error(origin + ": header length " + std::to_string(header_len) + " runs past the file (" +
                      std::to_string(bytes.size()) + " bytes)");
  nlohmann::json header;
  try {
    header =
        nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  } catch (const std::exception& e) {
    return make_error(origin + ": header is not JSON: " + e.what());
  }
  if (!header.is_object()) return make_error(origin + ": header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - header_len;
  const char* data = bytes.data() + 8 + header_len;
  safetensors_file out;
  // Byte ranges must tile the data exactly, as the format requires: no overlap, no hole, nothing after.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return make_error(origin + ": __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          return make_error(origin + ": __metadata__." + m.key() + " is not a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = origin + ": tensor '" + name + "'";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      return make_error(where + ": expected dtype, shape and data_offsets");
    if (!v["dtype"].is_string()) return make_error(where + ": dtype is not a string");
    auto dt = dtype_from_name(v["dtype"].get<std::string>());
    if (!dt) return make_error(where + ": " + dt.message());
    stored_tensor t;
    t.name = name;
    t.dtype = *dt;
    if (!v["shape"].is_array()) return make_error(where + ": shape is not a list");
    uint64_t elems = 1;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) return make_error(where + ": shape holds a value that is not a size");
      uint64_t n = d.get<uint64_t>();
      if (n != 0 && elems > (uint64_t{1} << 62) / n) return make_error(where + ": shape overflows");
      elems *= n;
      t.shape.push_back(static_cast<int64_t>(n));
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      return make_error(where + ": data_offsets is not [begin, end]");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > data_size)
      return make_error(where + ": bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                        ") are outside the data (" + std::to_string(data_size) + " bytes)");
    const uint64_t want = elems * static_cast<uint64_t>(dtype_size(t.dtype));
    if (end - begin != want)
      return make_error(where + ": " + std::to_string(end - begin) + " bytes for " + std::to_string(elems) +
                        " " + dtype_name(t.dtype) + " elements (expected " + std::to_string(want) + ")");
    t.data.assign(data + begin, data + end);
    ranges.emplace_back(begin, end);
    out.tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto& [b, e] : ranges) {
    if (b != at)
      return make_error(origin + ": tensor data overlaps or leaves a hole at byte " + std::to_string(at));
    at = e;
  }
  if (at != data_size)
    return make_error(origin + ": " + std::to_string(data_size - at) + " bytes after the last tensor");
  return out;
}

expected<safetensors_file> read_safetensors(const std::string& path) {
  auto bytes = read_whole(path);
  if (!bytes) return bytes.err();
  return parse_safetensors(*bytes, path);
}

expected<std::string> encode_safetensors(const safetensors_file& file) {
  nlohmann::json header = nlohmann::json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t at = 0;
  for (const auto& t : file.tensors) {
    if (static_cast<int64_t>(t.data.size()) != t.numel() * dtype_size(t.dtype))
      return make_error("tensor '" + t.name + "': data does not match its shape and dtype");
    header[t.name] = {
        {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + t.data.size()}}};
    at += t.data.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // the reference writer aligns the data to 8
  std::string out;
  out.reserve(8 + text.size() + at);
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += text;
  for (const auto& t : file.tensors) out.append(t.data.data(), t.data.size());
  return out;
}

status write_safetensors(const std::string& path, const safetensors_file& file) {
  auto bytes = encode_safetensors(file);
  if (!bytes) return bytes.err();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error("cannot write '" + path + "'");
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!out) return make_error("writing '" + path + "' failed");
  return {};
}

expected<std::map<std::string, std::string>> read_safetensors_index(const std::string& path) {
  auto bytes = read_whole(path);
  if (!bytes) return bytes.err();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*bytes);
  } catch (const std::exception& e) {
    return make_error(path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return make_error(path + ": expected an object with weight_map");
  std::map<std::string, std::string> out;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) return make_error(path + ": weight_map." + it.key() + " is not a file name");
    const auto shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "..")
      return make_error(path + ": weight_map." + it.key() + ": shard '" + shard +
                        "' is not a file beside the index");
    out[it.key()] = shard;
  }
  return out;
}

status write_safetensors_index(const std::string& path, const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size) {
  nlohmann::json j = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  std::ofstream out(path, std::ios::trunc);
  if (!out) return make_error("cannot write '" + path + "'");
  out << j.dump(2) << "\n";
  return out ? status{} : make_error("writing '" + path + "' failed");
}

}  // namespace crucible::policies
