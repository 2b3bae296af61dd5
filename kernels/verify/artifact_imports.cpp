#include "kernels/verify/artifact_imports.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

namespace crucible::kernels {

namespace {

template <class T>
bool read_at(const std::string& file, size_t off, T& out) {
  if (off + sizeof(T) > file.size()) return false;
  std::memcpy(&out, file.data() + off, sizeof(T));
  return true;
}

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

}  // namespace

expected<std::vector<std::string>> imported_symbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read '" + path + "'");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (!read_at(file, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return make_error("'" + path + "' is not a 64-bit ELF file");
  std::vector<std::string> out;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_at(file, eh.e_shoff + i * eh.e_shentsize, sh)) return make_error("truncated section headers");
    if (sh.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr strtab;
    if (!read_at(file, eh.e_shoff + sh.sh_link * eh.e_shentsize, strtab))
      return make_error("bad .dynstr link");
    size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    for (size_t k = 1; k < count; ++k) {
      Elf64_Sym sym;
      if (!read_at(file, sh.sh_offset + k * sh.sh_entsize, sym)) return make_error("truncated .dynsym");
      if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;
      size_t at = strtab.sh_offset + sym.st_name;
      if (at >= file.size()) continue;
      out.emplace_back(file.data() + at, strnlen(file.data() + at, file.size() - at));
    }
  }
  return out;
}

std::vector<std::string> suspicious_imports(const std::vector<std::string>& imports) {
  // Exact C names, then mangled C++ prefixes.
  static const std::vector<std::pair<const char*, std::set<std::string>>> exact = {
      {"spawns_thread", {"pthread_create", "thrd_create", "fork", "vfork", "clone", "clone3"}},
      {"reads_clock",
       {"clock_gettime", "gettimeofday", "time", "clock", "timespec_get", "ftime", "clock_getres",
        "cudaEventElapsedTime", "cuEventElapsedTime"}},
      // CUDA: work on a stream of its own escapes the caller's stream (and its events).
      {"creates_stream",
       {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cuStreamCreate",
        "cuStreamCreateWithPriority"}},
      {"dynamic_loading",
       {"dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr"}},
      {"system_call",
       {"system",  "popen",    "execl",     "execlp",      "execle",       "execv",   "execvp",
        "execvpe", "execve",   "fexecve",   "posix_spawn", "posix_spawnp", "syscall", "ptrace",
        "prctl",   "mprotect", "setrlimit", "sigaction",   "signal",       "kill",    "raise"}},
  };
  static const std::vector<std::pair<const char*, const char*>> prefixes = {
      {"calls_reference", "_ZN2at"},       {"calls_reference", "_ZN3c10"},
      {"calls_reference", "_ZN5torch"},    {"calls_reference", "_ZN6caffe2"},
      {"calls_reference", "_ZN8crucible"}, {"calls_reference", "_ZNK2at"},
      {"calls_reference", "_ZNK3c10"},     {"spawns_thread", "_ZNSt6thread"},
      {"reads_clock", "_ZNSt6chrono"},
  };
  std::vector<std::string> tags;
  for (const auto& sym : imports) {
    std::string base = sym.substr(0, sym.find('@'));  // drop a version suffix
    for (const auto& [flag, names] : exact)
      if (names.count(base)) tags.push_back(std::string(flag) + ":" + base);
    for (const auto& [flag, prefix] : prefixes)
      if (starts_with(base, prefix)) {
        tags.push_back(std::string(flag) + ":" + base);
        break;
      }
  }
  return tags;
}

}  // namespace crucible::kernels
