#include "policies/trainer_state.hpp"

#include <sstream>

namespace crucible::policies {

std::string first_line(const std::exception& e) {
  std::string s = e.what();
  s = s.substr(0, s.find('\n'));
  return s.substr(0, 200);
}

void write_trainer_meta(torch::serialize::OutputArchive& ar, int64_t format, int64_t steps) {
  ar.write("trainer.meta", torch::tensor(std::vector<int64_t>{format, steps}, torch::kLong));
}

std::vector<char> finish_trainer_state(torch::serialize::OutputArchive& ar,
                                       torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive opt;
  optimizer.save(opt);
  ar.write("optimizer", opt);
  std::ostringstream os;
  ar.save_to(os);
  const std::string s = os.str();
  return std::vector<char>(s.begin(), s.end());
}

expected<int64_t> open_trainer_state(const std::vector<char>& bytes, torch::serialize::InputArchive& ar,
                                     int64_t format, const std::string& who, const std::string& writer) {
  try {
    std::istringstream is(std::string(bytes.begin(), bytes.end()));
    ar.load_from(is);
  } catch (const std::exception& e) {
    return make_error(who + ": not a trainer checkpoint (" + std::to_string(bytes.size()) +
                      " bytes): " + first_line(e));
  }
  torch::Tensor meta;
  try {
    ar.read("trainer.meta", meta);
  } catch (const std::exception&) {
    return make_error(who + ": no trainer record; these bytes were not written by " + writer);
  }
  if (meta.numel() != 2 || meta.scalar_type() != torch::kLong || meta[0].item<int64_t>() != format)
    return make_error(who + ": unsupported trainer record (format " +
                      (meta.numel() > 0 && meta.scalar_type() == torch::kLong
                           ? std::to_string(meta[0].item<int64_t>())
                           : std::string("?")) +
                      ", this build reads format " + std::to_string(format) + ")");
  return meta[1].item<int64_t>();
}

expected<torch::serialize::InputArchive> read_optimizer_state(torch::serialize::InputArchive& ar,
                                                              const std::string& who) {
  torch::serialize::InputArchive opt;
  try {
    ar.read("optimizer", opt);
  } catch (const std::exception& e) {
    return make_error(who + ": no optimizer state: " + first_line(e));
  }
  return opt;
}

}  // namespace crucible::policies
