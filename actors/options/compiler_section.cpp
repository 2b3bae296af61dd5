#include "actors/options/compiler_section.hpp"

#include <filesystem>

#include "runtime/config/config.hpp"

namespace crucible::actors {
namespace {

runtime::field_list fields(compiler_section& s) {
  return {
      {"cxx", &s.cxx},
      {"flags", &s.flags},
      {"libs", &s.libs},
      {"cache_dir", &s.cache_dir},
      {"timeout_s", &s.timeout_s},
      {"memory_mb", &s.memory_mb},
      {"isolate_network", &s.isolate_network},
  };
}

status validate(const compiler_section& s, const runtime::config&) {
  if (!(s.timeout_s > 0)) return make_error("compiler.timeout_s: expected > 0");
  if (s.memory_mb < 256) return make_error("compiler.memory_mb: expected >= 256");
  return {};
}

void resolve(compiler_section& s, const runtime::config& c, const runtime::key_is_set& set) {
  s.target = c.target;
  if (c.target != "cuda") return;
  // The CUDA target compiles with nvcc: its defaults replace the CPU compiler's, key by key, unless the
  // file set that key itself.
  auto cu = kernels::cuda_compiler_defaults(c.cuda.arch, c.cuda.cudnn_dir);
  if (!c.cuda.nvcc.empty()) cu.cxx = c.cuda.nvcc;
  if (!set("compiler.cxx")) s.cxx = cu.cxx;
  if (!set("compiler.flags")) s.flags = cu.flags;
  if (!set("compiler.libs")) s.libs = cu.libs;
  if (!set("compiler.memory_mb")) s.memory_mb = cu.memory_mb;
  s.include_dirs = cu.include_dirs;
  s.lib_dirs = cu.lib_dirs;
}

status bind_run(compiler_section& s, const std::string& run_dir) {
  if (s.cache_dir.empty()) s.cache_dir = run_dir + "/compile_cache";
  std::error_code ec;
  std::filesystem::create_directories(s.cache_dir, ec);
  if (ec) return make_error("compiler.cache_dir '" + s.cache_dir + "': " + ec.message());
  return {};
}

const bool registered = runtime::register_section<compiler_section>({fields, validate, resolve, bind_run});

}  // namespace
}  // namespace crucible::actors
