#pragma once
// What the worker asks the kernel about itself around a candidate's call: threads alive (a candidate must
// not leave any behind) and this thread's involuntary context switches (a timed call during which it was
// preempted is re-taken).
namespace crucible::kernels {

/// Threads of this process now (/proc/self/task); -1 when it cannot be read.
int thread_count();

/// Times the calling thread was preempted so far.
long involuntary_switches();

}  // namespace crucible::kernels
