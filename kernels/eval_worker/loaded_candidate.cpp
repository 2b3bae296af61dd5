#include "kernels/eval_worker/loaded_candidate.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "kernels/verify/artifact_imports.hpp"

namespace crucible::kernels {

loaded_candidate::~loaded_candidate() {
  if (handle_ && !leak_) dlclose(handle_);
}

std::string loaded_candidate::open(const std::string& path, bool from_copy, const std::string& copy_path) {
  std::string load_path = path;
  if (from_copy) {
    // The same path again could be served by a still-mapped earlier instance with its static state (a
    // library with thread_local destructors is never unloaded): load a private copy instead.
    std::error_code ec;
    std::filesystem::copy_file(path, copy_path, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return "cannot copy artifact '" + path + "': " + ec.message();
    load_path = copy_path;
  }
  dlerror();
  handle_ = dlopen(load_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  // The mapping outlives the name: remove the copy now, so a worker killed mid-evaluation leaves none.
  if (from_copy) unlink(copy_path.c_str());
  if (!handle_) {
    const char* e = dlerror();
    return std::string("dlopen failed: ") + (e ? e : "unknown error");
  }
  dlerror();
  fn_ = reinterpret_cast<crucible_forward_fn>(dlsym(handle_, "crucible_forward"));
  if (!fn_) return "the artifact does not export crucible_forward (declare it extern \"C\")";
  return {};
}

std::vector<std::string> static_import_features(const std::string& artifact, bench_result& r) {
  std::vector<std::string> tags;
  if (auto imports = imported_symbols(artifact)) {
    tags = suspicious_imports(*imports);
    for (const auto& tag : tags)
      r.notes.push_back("static feature " + tag + ": the artifact imports " + tag.substr(tag.find(':') + 1));
  } else {
    r.notes.push_back("imports not inspected: " + imports.message());
  }
  return tags;
}

std::string load_candidate(loaded_candidate& lib, const std::string& artifact,
                           std::map<std::string, int>& loads, bench_result& r) {
  int n = loads[artifact]++;
  std::error_code tmp_ec;
  auto tmp = std::filesystem::temp_directory_path(tmp_ec);
  std::string copy_path = (tmp_ec ? std::filesystem::path("/tmp") : tmp).string() + "/crucible-worker-" +
                          std::to_string(getpid()) + "-" + std::to_string(n) + ".so";
  if (std::string err = lib.open(artifact, n > 0, copy_path); !err.empty()) return err;
  static_import_features(artifact, r);
  return {};
}

}  // namespace crucible::kernels
