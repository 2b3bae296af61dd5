#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <msgpack.hpp>

namespace crucible {

/// One generated kernel. The id is unique per generation event (the same source may be sampled twice and
/// both samples count); content_hash names the bytes, so compilation and verdicts are shared by content.
struct candidate {
  std::string id;
  std::string group_id;
  std::string task;
  std::string target = "cpu";    ///< cpu | cuda
  std::string language = "cpp";  ///< cpp (CPU target) | cu (CUDA target) | py (a KernelBench module)
  std::string content_hash;      ///< sha256 of source
  std::string program;           ///< program text, empty for hand-written source
  std::string source;
  /// A language model's whole answer (performance analysis, algorithm design, code); empty otherwise.
  std::string answer;
  /// Set when the answer holds no usable code: the candidate is scored `format` without compiling.
  std::string format_error;
  int64_t policy_version = 0;    ///< the weights version that sampled it
  std::vector<int32_t> tokens;   ///< sampled program tokens (policy vocabulary)
  std::vector<float> logprobs;   ///< per-token log-probabilities under the sampling policy
  std::vector<int32_t> context;  ///< the prompt tokens the sample was conditioned on
  double created_unix = 0.0;
  MSGPACK_DEFINE_MAP(id, group_id, task, target, language, content_hash, program, source, policy_version,
                     tokens, logprobs, context, created_unix, answer, format_error);
};

}  // namespace crucible
