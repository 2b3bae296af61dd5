#include "kernels/eval/compiler.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "kernels/eval/subprocess.hpp"
#include "messages/content_hash.hpp"

namespace crucible::kernels {

namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `data` to `dest` so that readers see the whole file or none of it.
bool publish_file(const fs::path& dir, const fs::path& dest, const std::string& data) {
  std::string tmpl = (dir / (".tmp-" + dest.filename().string() + "-XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return false;
  size_t off = 0;
  bool ok = true;
  while (off < data.size()) {
    ssize_t w = write(fd, data.data() + off, data.size() - off);
    if (w <= 0) {
      ok = false;
      break;
    }
    off += static_cast<size_t>(w);
  }
  ok = close(fd) == 0 && ok;
  std::error_code ec;
  if (ok) fs::rename(tmpl, dest, ec);
  if (!ok || ec) {
    fs::remove(tmpl, ec);
    return false;
  }
  return true;
}

// The compiler's identity (`cxx --version`), asked once per compiler per process: the cache must not serve
// an artifact built by a different compiler.
expected<std::string> compiler_identity(const std::string& cxx) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(cxx); it != known.end()) return it->second;
  auto run = run_process({cxx, "--version"}, process_limits{}, 30.0, 4096);
  if (!run) return make_error("compiler '" + cxx + "' cannot be run: " + run.message());
  if (run->timed_out || !run->exit.exited || run->exit.code != 0)
    return make_error("'" + cxx + " --version' failed (" + run->exit.describe() + "): " + run->output);
  std::string id = find_executable(cxx) + "\n" + run->output;
  known[cxx] = id;
  return id;
}

// -march=native makes the artifact a function of the CPU too.
std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) return line;
  return {};
}

std::string trim_log(std::string log, size_t total_bytes, size_t max_bytes) {
  if (log.size() > max_bytes) log.resize(max_bytes);
  if (total_bytes > log.size()) {
    // Cut at a line boundary where one is near, so the last diagnostic shown is whole.
    size_t nl = log.rfind('\n');
    if (nl != std::string::npos && nl + 512 > log.size()) log.resize(nl + 1);
    if (!log.empty() && log.back() != '\n') log += '\n';
    log += "[... " + std::to_string(total_bytes - log.size()) + " more bytes of diagnostics trimmed]\n";
  }
  return log;
}

bool resource_failure(const std::string& log) {
  for (const char* sign : {"virtual memory exhausted", "out of memory", "Cannot allocate memory",
                           "No space left on device", "Resource temporarily unavailable", "Killed signal",
                           "File size limit exceeded", "Disk quota exceeded"})
    if (log.find(sign) != std::string::npos) return true;
  return false;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + '\x1f';
  return out;
}

}  // namespace

std::string find_nvcc() {
  if (const char* env = std::getenv("CRUCIBLE_NVCC"); env && *env) return env;
  if (std::string p = find_executable("nvcc"); !p.empty()) return p;
  if (fs::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return {};
}

compiler_options cuda_compiler_defaults(const std::string& arch, const std::string& cudnn_dir) {
  compiler_options o;
  o.target = "cuda";
  o.cxx = find_nvcc();
  if (o.cxx.empty()) o.cxx = "nvcc";  // compile_source then says it cannot be run
  // The shared cudart: a statically linked one would import dlopen, pthread_create and clock_gettime
  // into every artifact and hide what the candidate itself calls.
  o.flags = {"-O3", "-std=c++17", "-arch=" + arch, "--cudart=shared", "-Xcompiler", "-fPIC", "-shared"};
  o.libs = {"-lcublas", "-l:libcudnn.so.9"};
  std::string dir = cudnn_dir;
  if (dir.empty())
    if (const char* env = std::getenv("CRUCIBLE_CUDNN_DIR"); env && *env) dir = env;
  if (!dir.empty()) {
    o.include_dirs.push_back(dir + "/include");
    o.lib_dirs.push_back(dir + "/lib");
  }
  o.memory_mb = 8192;
  return o;
}

compile_result stage_module(const std::string& candidate_id, const std::string& source,
                            const compiler_options& options) {
  compile_result r;
  r.candidate_id = candidate_id;
  r.content_hash = sha256_hex(source);
  if (options.cache_dir.empty()) {
    r.log = "stage_module: compiler_options.cache_dir is empty (set compiler.cache_dir)";
    return r;
  }
  std::error_code ec;
  fs::create_directories(options.cache_dir, ec);
  const fs::path path = fs::absolute(options.cache_dir, ec) / (r.content_hash + ".py");
  if (fs::exists(path, ec)) {
    r.ok = r.cached = true;
    r.artifact = path.string();
    return r;
  }
  // Written beside, then renamed: a reader never sees half a file.
  const fs::path part = path.string() + ".part-" + std::to_string(getpid());
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out << source;
    if (!out.flush()) {
      r.log = "stage_module: cannot write '" + part.string() + "'";
      return r;
    }
  }
  fs::rename(part, path, ec);
  if (ec) {
    r.log = "stage_module: cannot publish '" + path.string() + "': " + ec.message();
    fs::remove(part, ec);
    return r;
  }
  r.ok = true;
  r.artifact = path.string();
  return r;
}

compile_result compile_source(const std::string& candidate_id, const std::string& source,
                              const compiler_options& options) {
  auto t0 = clock_type::now();
  compile_result r;
  r.candidate_id = candidate_id;
  r.content_hash = sha256_hex(source);
  auto finish = [&](compile_result& res) -> compile_result& {
    res.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    return res;
  };

  if (options.target != "cpu" && options.target != "cuda") {
    r.log = "compile_source: unknown target '" + options.target + "' (expected cpu or cuda)";
    return finish(r);
  }
  const bool cuda = options.target == "cuda";
  const std::string source_name = cuda ? "candidate.cu" : "candidate.cpp";
  if (options.cache_dir.empty()) {
    r.log = "compile_source: compiler_options.cache_dir is empty (set compiler.cache_dir)";
    return finish(r);
  }
  std::string include_dir = options.include_dir;
#ifdef CRUCIBLE_SOURCE_DIR
  if (include_dir.empty()) include_dir = CRUCIBLE_SOURCE_DIR "/kernels/abi";
#endif

  std::error_code ec;
  fs::create_directories(options.cache_dir, ec);
  fs::path cache = fs::absolute(options.cache_dir, ec);
  if (!fs::is_directory(cache)) {
    r.log = "compile_source: cannot create cache directory '" + options.cache_dir + "'";
    return finish(r);
  }

  auto identity = compiler_identity(options.cxx);
  if (!identity) {
    r.log = identity.message();
    return finish(r);
  }

  bool native = false;
  for (const auto& f : options.flags) native |= f.find("=native") != std::string::npos;
  std::string key_material = "crucible-compile-v1\x1e" + source + "\x1e" + options.target + "\x1e" +
                             join(options.flags) + "\x1e" + join(options.libs) + "\x1e" +
                             join(options.include_dirs) + "\x1e" + join(options.lib_dirs) + "\x1e" +
                             *identity + "\x1e" + read_file(fs::path(include_dir) / "crucible_abi.h") +
                             "\x1e" + (native ? cpu_identity() : std::string());
  std::string key = sha256_hex(key_material);
  fs::path so_path = cache / (key + ".so");
  fs::path fail_path = cache / (key + ".log");
  fs::path warn_path = cache / (key + ".warnings");

  if (fs::exists(so_path)) {
    r.ok = true;
    r.cached = true;
    r.artifact = so_path.string();
    r.log = read_file(warn_path);
    return finish(r);
  }
  if (fs::exists(fail_path)) {
    r.cached = true;
    r.log = read_file(fail_path);
    return finish(r);
  }

  // Compile in a private directory on the cache's filesystem, so publishing is one rename.
  std::string tmpl = (cache / (".build-" + key.substr(0, 16) + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) {
    r.log = "compile_source: cannot create a build directory in '" + cache.string() + "'";
    return finish(r);
  }
  fs::path work(tmpl);
  {
    std::ofstream out(work / source_name, std::ios::binary);
    out << source;
    if (!out) {
      r.log = "compile_source: cannot write the source to '" + work.string() + "'";
      fs::remove_all(work, ec);
      return finish(r);
    }
  }

  std::vector<std::string> argv = {options.cxx};
  argv.insert(argv.end(), options.flags.begin(), options.flags.end());
  if (!include_dir.empty()) argv.push_back("-I" + include_dir);
  for (const auto& d : options.include_dirs) argv.push_back("-I" + d);
  argv.insert(argv.end(), {source_name, "-o", "candidate.so"});
  for (const auto& d : options.lib_dirs) {
    argv.push_back("-L" + d);
    argv.push_back(cuda ? "-Xlinker=-rpath," + d : "-Wl,-rpath," + d);
  }
  argv.insert(argv.end(), options.libs.begin(), options.libs.end());

  process_limits limits;
  limits.cpu_s = options.timeout_s;
  limits.memory_mb = options.memory_mb;
  limits.file_mb = 512;
  limits.max_processes = options.max_processes;
  limits.isolate_network = options.isolate_network;
  auto run = run_process(argv, limits, options.timeout_s, std::max<size_t>(options.max_log_bytes, 256),
                         work.string());
  if (!run) {
    r.log = "compile_source: cannot run the compiler: " + run.message();
    fs::remove_all(work, ec);
    return finish(r);
  }
  std::string log = trim_log(run->output, run->output_bytes, options.max_log_bytes);

  if (run->timed_out) {
    // Not cached: a deadline depends on the machine's load as much as on the source.
    r.log = log + "compile timed out after " + std::to_string(options.timeout_s) + " s (killed)\n";
  } else if (!run->exit.exited) {
    r.log = log + "compiler killed by " + run->exit.describe() +
            (run->exit.signal == SIGXCPU ? " (CPU time limit)" : "") + "\n";
  } else if (run->exit.code != 0) {
    r.log = log.empty() ? "compiler failed with " + run->exit.describe() + "\n" : log;
    // A broken source is not compiled again; a compiler starved of memory, disk or processes may succeed
    // next time, so that failure is not remembered.
    if (!resource_failure(r.log)) publish_file(cache, fail_path, r.log);
  } else if (!fs::exists(work / "candidate.so")) {
    r.log = log + "compiler reported success but wrote no shared object\n";
  } else {
    if (!log.empty()) publish_file(cache, warn_path, log);
    fs::rename(work / "candidate.so", so_path, ec);
    if (ec) {
      r.log = log + "compile_source: cannot publish the artifact: " + ec.message() + "\n";
    } else {
      r.ok = true;
      r.artifact = so_path.string();
      r.log = log;
    }
  }
  fs::remove_all(work, ec);
  return finish(r);
}

}  // namespace crucible::kernels
