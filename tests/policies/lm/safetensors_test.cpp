#include "policies/lm/safetensors.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

namespace crucible::policies {
namespace {

std::string scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("crucible-st-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return (d / name).string();
}

stored_tensor f32_tensor(const std::string& name, std::vector<int64_t> shape, float start) {
  stored_tensor t;
  t.name = name;
  t.shape = std::move(shape);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The header: 8-byte length, then JSON, then data.
std::string with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json + data;
}

void expect_error(const std::string& bytes, const std::string& fragment) {
  auto f = parse_safetensors(bytes, "t.safetensors");
  ASSERT_FALSE(f) << "accepted a bad file";
  EXPECT_NE(f.message().find(fragment), std::string::npos) << f.message();
}

TEST(Safetensors, WrittenFilesReadBackWithNamesShapesDtypesAndMetadata) {
  safetensors_file f;
  f.tensors.push_back(f32_tensor("a.weight", {2, 3}, 0));
  f.tensors.push_back(f32_tensor("b", {4}, 10));
  stored_tensor half;
  half.name = "h";
  half.dtype = tensor_dtype::bf16;
  half.shape = {3};
  half.data = {1, 2, 3, 4, 5, 6};
  f.tensors.push_back(half);
  f.metadata["format"] = "pt";
  const auto path = scratch("rt.safetensors");
  ASSERT_TRUE(write_safetensors(path, f));
  EXPECT_EQ((file_bytes(path).size() - 8 - (6 * 4 + 4 * 4 + 6)) % 8, 0u) << "header padded to 8 bytes";
  auto back = read_safetensors(path);
  ASSERT_TRUE(back) << back.message();
  ASSERT_EQ(back->tensors.size(), 3u);
  std::map<std::string, stored_tensor> by_name;
  for (auto& t : back->tensors) by_name[t.name] = t;
  EXPECT_EQ(by_name["a.weight"].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(by_name["a.weight"].data, f.tensors[0].data);
  EXPECT_EQ(by_name["b"].data, f.tensors[1].data);
  EXPECT_EQ(by_name["h"].dtype, tensor_dtype::bf16);
  EXPECT_EQ(by_name["h"].data, half.data);
  EXPECT_EQ(back->metadata.at("format"), "pt");
}

TEST(Safetensors, EveryDtypeNameMapsBothWays) {
  for (auto d :
       {tensor_dtype::f32, tensor_dtype::f16, tensor_dtype::bf16, tensor_dtype::f64, tensor_dtype::i64,
        tensor_dtype::i32, tensor_dtype::i16, tensor_dtype::i8, tensor_dtype::u8, tensor_dtype::boolean}) {
    auto back = dtype_from_name(dtype_name(d));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(dtype_from_name("F8_E4M3"));
}

TEST(Safetensors, MalformedFilesAreErrorsNamingWhatIsWrong) {
  expect_error("abc", "shorter than the 8-byte header length");
  expect_error(with_header("{}", "").substr(0, 9), "runs past the file");
  std::string huge(8, '\xff');
  expect_error(huge + "{}", "runs past the file");
  expect_error(with_header("[1]", ""), "not a JSON object");
  expect_error(with_header("{nope", ""), "not JSON");
  expect_error(with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"),
               "outside the data");
  expect_error(with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"),
               "8 bytes for 3 F32 elements");
  expect_error(with_header(R"({"x":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", "12345678"),
               "dtype 'Q4' is not supported");
  expect_error(with_header(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "12345678"),
               "not a size");
  expect_error(with_header(R"({"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("y":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                           "123456"),
               "overlaps or leaves a hole");
  expect_error(with_header(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "1234"),
               "2 bytes after the last tensor");
  expect_error(with_header(R"({"x":{"dtype":"U8","shape":[2]}})", "12"),
               "expected dtype, shape and data_offsets");
  expect_error(
      with_header(R"({"x":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,2]}})",
                  "12"),
      "shape overflows");
}

// Random corruption of a valid file never crashes or reads out of bounds: it parses or says why not.
TEST(Safetensors, RandomMutationsParseOrFailCleanly) {
  safetensors_file f;
  f.tensors.push_back(f32_tensor("w", {3, 2}, 1));
  f.tensors.push_back(f32_tensor("v", {5}, 7));
  const auto path = scratch("mut.safetensors");
  ASSERT_TRUE(write_safetensors(path, f));
  const std::string good = file_bytes(path);
  std::mt19937 rng(5);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string b = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 3) {
        case 0:
          b[rng() % b.size()] = static_cast<char>(rng());
          break;
        case 1:
          b.resize(rng() % b.size());
          break;
        default:
          b.insert(rng() % (b.size() + 1), 1, static_cast<char>(rng()));
          break;
      }
      if (b.empty()) break;
    }
    auto r = parse_safetensors(b, "m");
    if (r) {
      ++parsed;
      for (const auto& t : r->tensors)
        EXPECT_EQ(static_cast<int64_t>(t.data.size()), t.numel() * dtype_size(t.dtype));
    } else {
      EXPECT_FALSE(r.message().empty());
    }
  }
  EXPECT_LT(parsed, 3000);
}

TEST(Safetensors, TheShardIndexMapsTensorsToFilesBesideIt) {
  const auto path = scratch("model.safetensors.index.json");
  ASSERT_TRUE(write_safetensors_index(
      path, {{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}}, 64));
  auto map = read_safetensors_index(path);
  ASSERT_TRUE(map) << map.message();
  EXPECT_EQ(map->at("b"), "model-00002-of-00002.safetensors");
  std::ofstream(path) << R"({"weight_map": {"a": "../../etc/passwd"}})";
  auto bad = read_safetensors_index(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("not a file beside the index"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace crucible::policies
