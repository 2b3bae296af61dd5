#include "policies/lm/decoder_lm.hpp"

#include "policies/lm/decoder_model_holder.hpp"
#include "policies/lm/lm_checkpoint.hpp"

namespace crucible::policies {

decoder_lm::decoder_lm() = default;
decoder_lm::~decoder_lm() = default;

expected<std::unique_ptr<decoder_lm>> decoder_lm::create(const decoder_config& config, uint64_t seed) {
  if (auto st = validate_decoder_config(config); !st) return st.err();
  std::unique_ptr<decoder_lm> lm(new decoder_lm());
  lm->model_ = std::make_unique<decoder_model_holder>(decoder_model(config));
  lm->model_->model->init_weights(seed);
  return lm;
}

expected<std::unique_ptr<decoder_lm>> decoder_lm::load(const std::string& dir) {
  auto model = load_lm_checkpoint(dir);
  if (!model) return model.err();
  std::unique_ptr<decoder_lm> lm(new decoder_lm());
  lm->model_ = std::make_unique<decoder_model_holder>(std::move(*model));
  return lm;
}

status decoder_lm::place(const std::string& device, tensor_dtype dtype) {
  auto dt = torch_dtype_of(dtype);
  if (!dt) return dt.err();
  try {
    model_->model->to(torch::Device(device), *dt);
  } catch (const std::exception& e) {
    return make_error("cannot place the model on '" + device + "': " + std::string(e.what()).substr(0, 200));
  }
  return {};
}

status decoder_lm::save(const std::string& dir, tensor_dtype dtype, int64_t max_shard_bytes) {
  return save_lm_checkpoint(model_->model, dir, dtype, max_shard_bytes);
}

expected<std::vector<float>> decoder_lm::logits(const std::vector<int64_t>& tokens) {
  const auto& c = config();
  for (auto t : tokens)
    if (t < 0 || t >= c.vocab_size)
      return make_error("token " + std::to_string(t) + " is outside the vocabulary (" +
                        std::to_string(c.vocab_size) + ")");
  if (tokens.empty()) return std::vector<float>{};
  torch::NoGradGuard no_grad;
  auto& m = model_->model;
  auto ids = torch::tensor(tokens, torch::kLong).unsqueeze(0);
  auto out = m->logits(m->hidden(ids)).squeeze(0).to(torch::kFloat).contiguous();
  return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

const decoder_config& decoder_lm::config() const {
  return model_->model->config;
}

int64_t decoder_lm::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : model_->model->parameters()) n += p.numel();
  return n;
}

decoder_model_holder& decoder_lm::model() {
  return *model_;
}

}  // namespace crucible::policies
