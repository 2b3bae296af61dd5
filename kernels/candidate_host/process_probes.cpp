#include "kernels/candidate_host/process_probes.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace crucible::kernels::process_probes {

namespace {

// One bit per probe, in the order of names[].
const char* const names[] = {"mallopt",  "malloc_trim", "mallinfo",  "mallinfo2", "sbrk",  "setenv", "putenv",
                             "unsetenv", "getrusage",   "getauxval", "dlopen",    "dlsym", "dlmopen"};
std::atomic<unsigned> hits{0};
std::atomic<bool> armed{false};

void hit(int index) {
  if (armed.load(std::memory_order_relaxed)) hits.fetch_or(1u << index, std::memory_order_relaxed);
}

using dlsym_fn = void* (*)(void*, const char*);
using dlopen_fn = void* (*)(const char*, int);

// The C library's own dlsym, found without going through the probe of that name (dlvsym is not probed, so
// this reaches the C library's).
dlsym_fn libc_dlsym() {
  static dlsym_fn f = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<dlsym_fn>(p);
  }();
  return f;
}

template <class Fn>
Fn next(const char* name) {
  dlsym_fn f = libc_dlsym();
  return f ? reinterpret_cast<Fn>(f(RTLD_NEXT, name)) : nullptr;
}

}  // namespace

void arm() {
  hits.store(0);
  armed.store(true);
}

void* real_dlopen(const char* file, int mode) {
  static auto f = next<dlopen_fn>("dlopen");
  return f ? f(file, mode) : nullptr;
}

void* real_dlsym(void* handle, const char* name) {
  dlsym_fn f = libc_dlsym();
  return f ? f(handle, name) : nullptr;
}

std::string take() {
  unsigned h = hits.exchange(0);
  std::string out;
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (h & (1u << i)) out += (out.empty() ? "" : ", ") + std::string(names[i]);
  return out;
}

}  // namespace crucible::kernels::process_probes

namespace probes = crucible::kernels::process_probes;

// The probes themselves, exported by the host executable (see kernels/CMakeLists.txt), so a candidate's
// references bind here before the C library.
extern "C" {

int mallopt(int param, int value) {
  probes::hit(0);
  static auto real = probes::next<int (*)(int, int)>("mallopt");
  return real ? real(param, value) : 0;
}

int malloc_trim(size_t pad) {
  probes::hit(1);
  static auto real = probes::next<int (*)(size_t)>("malloc_trim");
  return real ? real(pad) : 0;
}

struct mallinfo mallinfo() {
  probes::hit(2);
  static auto real = probes::next<struct mallinfo (*)()>("mallinfo");
  return real ? real() : (struct mallinfo){};
}

struct mallinfo2 mallinfo2() {
  probes::hit(3);
  static auto real = probes::next<struct mallinfo2 (*)()>("mallinfo2");
  return real ? real() : (struct mallinfo2){};
}

void* sbrk(intptr_t increment) {
  probes::hit(4);
  static auto real = probes::next<void* (*)(intptr_t)>("sbrk");
  return real ? real(increment) : reinterpret_cast<void*>(-1);
}

int setenv(const char* name, const char* value, int overwrite) {
  probes::hit(5);
  static auto real = probes::next<int (*)(const char*, const char*, int)>("setenv");
  return real ? real(name, value, overwrite) : -1;
}

int putenv(char* string) {
  probes::hit(6);
  static auto real = probes::next<int (*)(char*)>("putenv");
  return real ? real(string) : -1;
}

int unsetenv(const char* name) {
  probes::hit(7);
  static auto real = probes::next<int (*)(const char*)>("unsetenv");
  return real ? real(name) : -1;
}

int getrusage(int who, struct rusage* usage) {
  probes::hit(8);
  static auto real = probes::next<int (*)(int, struct rusage*)>("getrusage");
  return real ? real(who, usage) : -1;
}

unsigned long getauxval(unsigned long type) {
  probes::hit(9);
  static auto real = probes::next<unsigned long (*)(unsigned long)>("getauxval");
  return real ? real(type) : 0;
}

void* dlopen(const char* file, int mode) {
  probes::hit(10);
  return probes::real_dlopen(file, mode);
}

void* dlsym(void* handle, const char* name) {
  probes::hit(11);
  return probes::real_dlsym(handle, name);
}

void* dlmopen(Lmid_t lmid, const char* file, int mode) {
  probes::hit(12);
  static auto real = probes::next<void* (*)(Lmid_t, const char*, int)>("dlmopen");
  return real ? real(lmid, file, mode) : nullptr;
}

}  // extern "C"
