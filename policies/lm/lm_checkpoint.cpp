#include "policies/lm/lm_checkpoint.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace crucible::policies {
namespace {

namespace fs = std::filesystem;

struct float_dtype_row {
  tensor_dtype file;
  torch::Dtype torch;
  const char* config_name;
};
const float_dtype_row float_dtypes[] = {
    {tensor_dtype::f32, torch::kFloat, "float32"},
    {tensor_dtype::f16, torch::kHalf, "float16"},
    {tensor_dtype::bf16, torch::kBFloat16, "bfloat16"},
};

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Tensors some checkpoints carry that are not parameters: rotary frequency buffers, and the output matrix
// of a tied model written out anyway.
bool ignorable(const std::string& name, const decoder_config& c) {
  const std::string suffix = "rotary_emb.inv_freq";
  if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return true;
  return c.tie_word_embeddings && name == "lm_head.weight";
}

expected<std::map<std::string, stored_tensor>> read_weight_files(const std::string& dir) {
  std::vector<std::string> files;
  const fs::path single = fs::path(dir) / "model.safetensors",
                 index = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(single, ec)) {
    files.push_back(single.string());
  } else if (fs::exists(index, ec)) {
    auto map = read_safetensors_index(index.string());
    if (!map) return map.err();
    std::set<std::string> shards;
    for (const auto& [name, shard] : *map) shards.insert(shard);
    for (const auto& s : shards) files.push_back((fs::path(dir) / s).string());
  } else {
    return make_error(dir + ": neither model.safetensors nor model.safetensors.index.json");
  }
  std::map<std::string, stored_tensor> out;
  for (const auto& f : files) {
    auto file = read_safetensors(f);
    if (!file) return file.err();
    for (auto& t : file->tensors) {
      if (out.count(t.name)) return make_error(f + ": tensor '" + t.name + "' is also in another shard");
      std::string name = t.name;
      out.emplace(std::move(name), std::move(t));
    }
  }
  return out;
}

}  // namespace

expected<torch::Dtype> torch_dtype_of(tensor_dtype d) {
  for (const auto& r : float_dtypes)
    if (r.file == d) return r.torch;
  return make_error(std::string("dtype ") + dtype_name(d) + " is not a weight dtype (F32, F16, BF16)");
}

const char* config_dtype_name(tensor_dtype d) {
  for (const auto& r : float_dtypes)
    if (r.file == d) return r.config_name;
  return "float32";
}

namespace {

// Copies named tensors into the model: every parameter present with its shape, nothing left over.
status copy_lm_tensors(decoder_model& model, const std::map<std::string, stored_tensor>& tensors,
                       const std::string& origin) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& [name, param] : checkpoint_parameters(model)) {
    auto it = tensors.find(name);
    if (it == tensors.end()) return make_error(origin + ": tensor '" + name + "' is missing");
    const auto& t = it->second;
    if (t.shape != param.sizes().vec())
      return make_error(origin + ": tensor '" + name + "' has shape " + shape_text(t.shape) +
                        ", the config needs " + shape_text(param.sizes().vec()));
    auto dt = torch_dtype_of(t.dtype);
    if (!dt) return make_error(origin + ": tensor '" + name + "': " + dt.message());
    auto src = torch::from_blob(const_cast<char*>(t.data.data()), t.shape, torch::TensorOptions().dtype(*dt));
    param.copy_(src.to(param.device(), param.scalar_type()));
    used.insert(name);
  }
  for (const auto& [name, t] : tensors)
    if (!used.count(name) && !ignorable(name, model->config))
      return make_error(origin + ": tensor '" + name + "' is not part of a " +
                        model_type_of(model->config.family) + " model of this config");
  return {};
}

std::vector<stored_tensor> stored_parameters(decoder_model& model, tensor_dtype dtype, torch::Dtype tdt,
                                             int64_t* total) {
  std::vector<stored_tensor> all;
  for (auto& [name, param] : checkpoint_parameters(model)) {
    auto t = param.detach().to(torch::kCPU).to(tdt).contiguous();
    stored_tensor s;
    s.name = name;
    s.dtype = dtype;
    s.shape = t.sizes().vec();
    s.data.resize(static_cast<size_t>(t.numel() * t.element_size()));
    std::memcpy(s.data.data(), t.data_ptr(), s.data.size());
    if (total) *total += static_cast<int64_t>(s.data.size());
    all.push_back(std::move(s));
  }
  return all;
}

}  // namespace

status load_lm_weights(decoder_model& model, const std::string& dir) {
  auto tensors = read_weight_files(dir);
  if (!tensors) return tensors.err();
  return copy_lm_tensors(model, *tensors, dir);
}

expected<std::string> lm_weights_bytes(decoder_model& model) {
  safetensors_file f;
  f.tensors = stored_parameters(model, tensor_dtype::f32, torch::kFloat, nullptr);
  return encode_safetensors(f);
}

status load_lm_weights_bytes(decoder_model& model, const std::string& bytes) {
  auto f = parse_safetensors(bytes, "weights");
  if (!f) return f.err();
  std::map<std::string, stored_tensor> tensors;
  for (auto& t : f->tensors) tensors[t.name] = std::move(t);
  return copy_lm_tensors(model, tensors, "weights");
}

expected<decoder_model> load_lm_checkpoint(const std::string& dir, torch::Dtype dtype,
                                           const torch::Device& device) {
  auto config = read_decoder_config((fs::path(dir) / "config.json").string());
  if (!config) return config.err();
  decoder_model model(*config);
  model->to(dtype);
  if (auto st = load_lm_weights(model, dir); !st) return st.err();
  model->to(device);
  return model;
}

status save_lm_checkpoint(decoder_model& model, const std::string& dir, tensor_dtype dtype,
                          int64_t max_shard_bytes) {
  auto tdt = torch_dtype_of(dtype);
  if (!tdt) return tdt.err();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error("cannot create '" + dir + "': " + ec.message());
  int64_t total = 0;
  std::vector<stored_tensor> all = stored_parameters(model, dtype, *tdt, &total);
  // Shards in parameter order, each closed before it would pass the bound (a tensor larger than the bound
  // gets a shard of its own).
  std::vector<safetensors_file> shards(1);
  int64_t in_shard = 0;
  for (auto& s : all) {
    if (max_shard_bytes > 0 && in_shard > 0 &&
        in_shard + static_cast<int64_t>(s.data.size()) > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    in_shard += static_cast<int64_t>(s.data.size());
    shards.back().tensors.push_back(std::move(s));
  }
  for (auto& sh : shards) sh.metadata["format"] = "pt";  // what transformers expects of a PyTorch file
  // A previous save's files go first, so a directory never mixes two layouts (a loader prefers the single
  // file).
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f == "model.safetensors" || f == "model.safetensors.index.json" ||
        (f.rfind("model-", 0) == 0 && f.find("-of-") != std::string::npos))
      fs::remove(e.path(), ec);
  }
  if (shards.size() == 1) {
    if (auto st = write_safetensors((fs::path(dir) / "model.safetensors").string(), shards[0]); !st)
      return st;
  } else {
    std::map<std::string, std::string> weight_map;
    char name[64];
    for (size_t i = 0; i < shards.size(); ++i) {
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      for (const auto& t : shards[i].tensors) weight_map[t.name] = name;
      if (auto st = write_safetensors((fs::path(dir) / name).string(), shards[i]); !st) return st;
    }
    if (auto st = write_safetensors_index((fs::path(dir) / "model.safetensors.index.json").string(),
                                          weight_map, static_cast<uint64_t>(total));
        !st)
      return st;
  }
  auto config = model->config;
  config.torch_dtype = config_dtype_name(dtype);
  std::ofstream out(fs::path(dir) / "config.json", std::ios::trunc);
  out << decoder_config_json(config);
  if (!out) return make_error("cannot write '" + dir + "/config.json'");
  return {};
}

}  // namespace crucible::policies
