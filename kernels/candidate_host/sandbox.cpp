#include "kernels/candidate_host/sandbox.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace crucible::kernels::sandbox {

namespace {

std::atomic<int> denied_count{0};
int32_t denied_nrs[8];

void on_sigsys(int, siginfo_t* info, void* context) {
  int n = denied_count.fetch_add(1, std::memory_order_relaxed);
  if (n < 8) denied_nrs[n] = info->si_syscall;
  // The refused call returns -EPERM, as SCMP_ACT_ERRNO would, so the candidate sees an ordinary failure.
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = static_cast<uint64_t>(-EPERM);
#else
  (void)uc;
#endif
}

#if defined(__x86_64__) || defined(__aarch64__)
const uint32_t refuse = SCMP_ACT_TRAP;
#else
const uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
#endif

// The allowlist: what computing on memory needs, and nothing that reaches outside the process.
const int allowed[] = {
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(close),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(lseek),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(brk),
    SCMP_SYS(madvise),
    SCMP_SYS(futex),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(time),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(getrandom),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(uname),
    SCMP_SYS(getrusage),
    SCMP_SYS(sysinfo),
    // Memory placement of its own pages (OpenBLAS binds its buffers), and who it is.
    SCMP_SYS(mbind),
    SCMP_SYS(get_mempolicy),
    SCMP_SYS(set_mempolicy),
    SCMP_SYS(getcpu),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
};

// Refused while the artifact loads (its initialisers run then); everything else the loader may need.
const int refused_while_loading[] = {
    SCMP_SYS(clone),
    SCMP_SYS(clone3),
    SCMP_SYS(fork),
    SCMP_SYS(vfork),
    SCMP_SYS(execve),
    SCMP_SYS(execveat),
    SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(socket),
    SCMP_SYS(socketpair),
    SCMP_SYS(connect),
    SCMP_SYS(bind),
    SCMP_SYS(listen),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(setitimer),
    SCMP_SYS(alarm),
    SCMP_SYS(timer_create),
    SCMP_SYS(timerfd_create),
    SCMP_SYS(io_uring_setup),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(bpf),
    SCMP_SYS(setpriority),
    SCMP_SYS(sched_setaffinity),
    SCMP_SYS(sched_setscheduler),
    SCMP_SYS(sched_setattr),
    SCMP_SYS(kill),
    SCMP_SYS(tkill),
    SCMP_SYS(tgkill),
    SCMP_SYS(pidfd_open),
    SCMP_SYS(pidfd_getfd),
    SCMP_SYS(unshare),
    SCMP_SYS(setns),
    SCMP_SYS(mount),
    SCMP_SYS(unlink),
    SCMP_SYS(unlinkat),
    SCMP_SYS(rename),
    SCMP_SYS(renameat),
    SCMP_SYS(renameat2),
    SCMP_SYS(mkdir),
    SCMP_SYS(mkdirat),
    SCMP_SYS(truncate),
    SCMP_SYS(ftruncate),
    SCMP_SYS(memfd_create),
    SCMP_SYS(shmget),
    SCMP_SYS(shmat),
    SCMP_SYS(mq_open),
    SCMP_SYS(capset),
};

void drop_capabilities() {
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  syscall(SYS_capset, &header, none);
}

std::string install_sigsys_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return std::string("sigaction(SIGSYS): ") + std::strerror(errno);
  return {};
}

}  // namespace

std::string seal_for_loading() {
  drop_capabilities();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("no_new_privs: ") + std::strerror(errno);
  if (std::string e = install_sigsys_handler(); !e.empty()) return e;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return "seccomp_init failed";
  int rc = 0;
  for (int nr : refused_while_loading)
    if (rc == 0 && nr >= 0) rc = seccomp_rule_add(ctx, refuse, nr, 0);
  // Files only for reading: open and openat with a write access mode or O_CREAT are refused.
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_WRONLY));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_RDWR));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_WRONLY));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_RDWR));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT));
  if (rc == 0) rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(creat), 0);
  // No code is patched: nothing is made executable after mapping, nothing is writable and executable at once.
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(mprotect), 1,
                          SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, refuse, SCMP_SYS(mmap), 1,
                          SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC | PROT_WRITE, PROT_EXEC | PROT_WRITE));
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return std::string("loading filter not installed: ") + std::strerror(-rc);
  return {};
}

std::string install() {
  scmp_filter_ctx ctx = seccomp_init(refuse);
  if (!ctx) return "seccomp_init failed";
  int rc = 0;
  for (int nr : allowed)
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
  // Memory, but never executable, and no protection changed afterwards (code and tables stay as loaded).
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);  // set before loading
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return std::string("seccomp filter not installed: ") + std::strerror(-rc);
  return {};
}

int take_denied(std::string& names) {
  int n = denied_count.exchange(0);
  names.clear();
  for (int i = 0; i < n && i < 8; ++i) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, denied_nrs[i]);
    if (!names.empty()) names += ", ";
    names += name ? name : std::to_string(denied_nrs[i]);
    std::free(name);
  }
  return n;
}

}  // namespace crucible::kernels::sandbox
