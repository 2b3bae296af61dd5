#pragma once
// The Python objects behind a kernelbench_module, and helpers shared by the code of kernels/python that
// drives them directly (the CUDA candidate, the reference's watch). Includes pybind11: include only from .cpp
// files here.
#include <string>

#include <pybind11/pybind11.h>

#include "kernels/python/kernelbench_module.hpp"

namespace crucible::kernels {

// Hidden, as pybind11's own types are (a type holding them is otherwise warned about).
struct __attribute__((visibility("hidden"))) kernelbench_module::impl {
  std::string path, class_name, device;
  pybind11::object module, cls, get_inputs, get_init_inputs, model;
  /// get_inputs() runs under `with torch.device(device)` (PyTorch 2): its factories draw on the device, not
  /// on one CPU thread (KernelBench's 6.4 GB inputs took minutes there). Cleared for good, so that a seed
  /// always draws the same values, when it raised there once (a CPU generator passed explicitly).
  bool draws_on_device = true;
  /// Why get_inputs() stopped drawing on the device (its error), empty while it draws there.
  std::string draws_moved;
};

/// A module of Crucible's own Python helpers, executed from `source` once per process and never released
/// (the interpreter is never finalized; a static's destructor at exit would touch Python without the GIL).
/// Each distinct `name` holds one source.
pybind11::object helper_module(const char* name, const char* source);

/// torch's name of a device: "cpu" when device < 0, else "cuda:N".
std::string torch_device(int device);

}  // namespace crucible::kernels
