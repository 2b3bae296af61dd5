#pragma once
// One dlopen'ed candidate artifact, as both sides of the worker (CPU and CUDA) load it: from a private copy
// when the same path was loaded before (a still-mapped earlier instance would serve its static state), with
// what the artifact imports inspected before its code runs.
#include <map>
#include <string>
#include <vector>

#include "kernels/abi/crucible_abi.h"
#include "messages/evaluation.hpp"

namespace crucible::kernels {

/// dlclose on destruction unless leak() was called: a candidate that left threads (or device work) running
/// in its code must stay mapped, or the worker crashes on the next candidate instead of this one.
class loaded_candidate {
 public:
  loaded_candidate() = default;
  loaded_candidate(const loaded_candidate&) = delete;
  loaded_candidate& operator=(const loaded_candidate&) = delete;
  ~loaded_candidate();
  /// Empty on success, else why it could not be loaded.
  std::string open(const std::string& path, bool from_copy, const std::string& copy_path);
  crucible_forward_fn fn() const { return fn_; }
  void leak() { leak_ = true; }

 private:
  void* handle_ = nullptr;
  crucible_forward_fn fn_ = nullptr;
  bool leak_ = false;
};

/// What the artifact imports that deserves scrutiny (threads, clocks, dlopen, processes, the reference's
/// libraries), as "flag:symbol" tags, each also a note in r. Static features are not evidence (DESIGN.md §6):
/// they make the worker check more, they never decide a verdict alone.
std::vector<std::string> static_import_features(const std::string& artifact, bench_result& r);

/// Loads `artifact` into `lib` (a private copy when `loads` says this worker loaded the path before) and
/// notes its static import features. Returns the load error, empty on success.
std::string load_candidate(loaded_candidate& lib, const std::string& artifact,
                           std::map<std::string, int>& loads, bench_result& r);

}  // namespace crucible::kernels
