#pragma once
// Internal to policies/: a trainer's checkpoint as one LibTorch archive — a meta record (format, steps), the
// trainer's own tensors, and the optimizer's state — in one framing for the program policy's and the
// language model's trainers. Includes LibTorch: include only from .cpp files.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "messages/expected.hpp"

namespace crucible::policies {

/// Starts a state: the meta record of `format` and `steps`.
void write_trainer_meta(torch::serialize::OutputArchive& ar, int64_t format, int64_t steps);
/// Adds the optimizer's state and returns the archive as bytes.
std::vector<char> finish_trainer_state(torch::serialize::OutputArchive& ar,
                                       torch::optim::Optimizer& optimizer);

/// Opens `bytes` into `ar` and checks its meta record; returns the steps. Errors begin with `who` ("grpo
/// state") and say which writer's bytes were expected (`writer`, e.g. "grpo_trainer::save_state").
expected<int64_t> open_trainer_state(const std::vector<char>& bytes, torch::serialize::InputArchive& ar,
                                     int64_t format, const std::string& who, const std::string& writer);

/// The optimizer's state in `ar` (read, not yet loaded into an optimizer); an error begins with `who`.
expected<torch::serialize::InputArchive> read_optimizer_state(torch::serialize::InputArchive& ar,
                                                              const std::string& who);

/// The first line of an exception's text, short enough for an error sentence.
std::string first_line(const std::exception& e);

}  // namespace crucible::policies
