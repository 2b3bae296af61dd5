#include "kernels/python/embedded_python.hpp"

#include <pybind11/embed.h>
#include <torch/version.h>

namespace py = pybind11;

namespace crucible::kernels {
namespace {

status start() {
  try {
    // Never finalized: torch's extension modules do not survive Py_Finalize, and the process ends anyway.
    py::initialize_interpreter();
  } catch (const std::exception& e) {
    return make_error(std::string("cannot start Python: ") + e.what());
  }
  try {
    auto torch = py::module_::import("torch");
    const auto version = torch.attr("__version__").cast<std::string>();
    // The Python torch must drive the libtorch this process links (same major.minor).
    const std::string linked =
        std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
    if (version.rfind(linked + ".", 0) != 0 && version != linked)
      return make_error("Python's torch is " + version + " but this build links LibTorch " + linked +
                        ": install the matching torch (Debian: python3-torch)");
  } catch (const std::exception& e) {
    return make_error(std::string("Python cannot import torch (Debian: apt-get install python3-torch): ") +
                      e.what());
  }
  return {};
}

}  // namespace

status start_python() {
  static const status outcome = start();
  return outcome;
}

bool python_cuda_available() {
  if (!start_python()) return false;
  try {
    return py::module_::import("torch").attr("cuda").attr("is_available")().cast<bool>();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace crucible::kernels
