#pragma once
// CPython inside this process (pybind11's embedding), for what only Python can run: KernelBench's reference
// modules and candidates. One interpreter per process, started on first use with torch imported — the
// Python torch whose libtorch is the one this process links (Debian's python3-torch beside libtorch; the
// GPU machine's PyTorch beside its LibTorch), so tensors pass between the two without copies.
#include <string>

#include "messages/expected.hpp"

namespace crucible::kernels {

/// Starts the interpreter and imports torch, once; later calls return the first outcome. An error when
/// Python or its torch is missing or torch's version differs from the linked LibTorch's. Call from the
/// thread that uses Python (the interpreter keeps the GIL on it).
status start_python();

/// Python's fork protocol, for a process that forks with the interpreter started (PyOS_BeforeFork and the
/// two AfterFork calls: its locks are reset in the child). No-ops while Python has not started. Call from
/// the thread that holds the GIL, around fork(2).
void python_before_fork();
void python_after_fork_in_parent();
void python_after_fork_in_child();

/// Whether Python's torch sees a CUDA device (false when Python does not start).
bool python_cuda_available();

/// "NVIDIA H200 (device 0)" as Python's torch names it; "CUDA device 0" when it cannot.
std::string python_cuda_device_name(int device);

}  // namespace crucible::kernels
