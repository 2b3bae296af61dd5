#pragma once
// The Python objects behind a kernelbench_module, for the code of kernels/python that drives them directly
// (the CUDA candidate, the reference's watch). Includes pybind11: include only from .cpp files here.
#include <string>

#include <pybind11/pybind11.h>

#include "kernels/python/kernelbench_module.hpp"

namespace crucible::kernels {

// Hidden, as pybind11's own types are (a type holding them is otherwise warned about).
struct __attribute__((visibility("hidden"))) kernelbench_module::impl {
  std::string path, class_name, device;
  pybind11::object module, cls, get_inputs, get_init_inputs, model;
};

}  // namespace crucible::kernels
