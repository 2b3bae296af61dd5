#include "runtime/pipeline/attempt_feedback.hpp"

#include <cstdio>
#include <sstream>

#include "kernels/verify/verdict_vocabulary.hpp"

namespace crucible::runtime {
namespace {

// Compiler output past its first errors repeats them; the policy reads the head.
constexpr size_t max_log_chars = 1500;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

std::string head_of(const std::string& log) {
  if (log.size() <= max_log_chars) return log;
  auto cut = log.rfind('\n', max_log_chars);
  return log.substr(0, cut == std::string::npos ? max_log_chars : cut) + "\n[... cut]";
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

}  // namespace

std::optional<attempt> attempt_of(const scored_candidate& c, const std::string& target) {
  auto o = kernels::parse_outcome(c.judged.outcome);
  if (!o || *o == kernels::outcome::error || *o == kernels::outcome::abandoned) return std::nullopt;
  attempt a;
  a.candidate_id = c.cand.id;
  if (!c.cand.answer.empty()) {
    a.answer = c.cand.answer;
  } else {
    a.answer = "```" + std::string(target == "cuda" ? "cuda" : "cpp") + "\n" + c.cand.source +
               (c.cand.source.empty() || c.cand.source.back() == '\n' ? "" : "\n") + "```";
  }
  std::ostringstream f;
  switch (*o) {
    case kernels::outcome::format:
      f << "The answer had no usable code: " << c.cand.format_error << ".";
      break;
    case kernels::outcome::compile_error:
      f << "It did not compile:\n```\n" << head_of(c.compiled.log) << "\n```";
      break;
    case kernels::outcome::incorrect:
      f << "It compiled, but its output was wrong (max abs error " << number(c.bench.max_abs_err)
        << ", max rel error " << number(c.bench.max_rel_err) << ").";
      if (!c.bench.error.empty()) f << " " << first_line(c.bench.error);
      break;
    case kernels::outcome::crash:
      f << "It crashed" << (c.bench.error.empty() ? "." : ": " + first_line(c.bench.error));
      break;
    case kernels::outcome::timeout:
      f << "It did not finish within the time limit.";
      break;
    case kernels::outcome::hack:
      f << "The verifier rejected it (" << joined(c.judged.flags) << "): it scores nothing.";
      break;
    case kernels::outcome::pass:
      f << "It is correct, with a verified speedup of " << number(c.judged.speedup)
        << "x over PyTorch eager.";
      break;
    default:
      return std::nullopt;
  }
  a.feedback = f.str();
  return a;
}

}  // namespace crucible::runtime
