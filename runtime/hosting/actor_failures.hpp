#pragma once
// An actor that throws dies with CAF's runtime_error and the supervisor restarts it; this makes the reason
// visible: the exception's message goes to the log, tagged with the role, and into the exit reason.
#include <exception>
#include <string>

#include <spdlog/spdlog.h>
#include <caf/error.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/sec.hpp>

namespace crucible::runtime {

template <class Self>
void log_failures(Self* self, const std::string& role) {
  self->set_exception_handler([role](caf::scheduled_actor*, std::exception_ptr& eptr) -> caf::error {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(eptr);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("{} failed: {}", role, what);
    return caf::make_error(caf::sec::runtime_error, role + ": " + what);
  });
}

/// An actor's error as a sentence for people: the message it was made with (make_error(sec, "...")), else
/// what CAF calls it ("request timed out", not "error(request_timeout)").
inline std::string error_sentence(const caf::error& err) {
  const auto& ctx = err.context();
  for (size_t i = 0; i < ctx.size(); ++i)
    if (ctx.match_element<std::string>(i)) return ctx.get_as<std::string>(i);
  if (err.category() == caf::atom("system")) {
    std::string name = caf::to_string(static_cast<caf::sec>(err.code()));
    for (auto& c : name)
      if (c == '_') c = ' ';
    return name;
  }
  return caf::to_string(err);
}

}  // namespace crucible::runtime
