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

}  // namespace crucible::runtime
