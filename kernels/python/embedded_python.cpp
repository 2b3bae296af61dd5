#include "kernels/python/embedded_python.hpp"

#include <string>

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
#ifdef CRUCIBLE_PYTHON_SITE
    // The site folders of the interpreter the build was configured with (a virtual environment's PyTorch on
    // the GPU machine): the embedded interpreter starts from the system prefix and would not see them.
    const std::string sites = CRUCIBLE_PYTHON_SITE;
    for (size_t at = 0; at < sites.size();) {
      size_t end = sites.find(':', at);
      if (end == std::string::npos) end = sites.size();
      if (end > at) py::module_::import("site").attr("addsitedir")(sites.substr(at, end - at));
      at = end + 1;
    }
#endif
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

void python_before_fork() {
  if (Py_IsInitialized()) PyOS_BeforeFork();
}
void python_after_fork_in_parent() {
  if (Py_IsInitialized()) PyOS_AfterFork_Parent();
}
void python_after_fork_in_child() {
  if (Py_IsInitialized()) PyOS_AfterFork_Child();
}

bool python_cuda_available() {
  if (!start_python()) return false;
  try {
    return py::module_::import("torch").attr("cuda").attr("is_available")().cast<bool>();
  } catch (const std::exception&) {
    return false;
  }
}

std::string python_cuda_device_name(int device) {
  const std::string fallback = "CUDA device " + std::to_string(device);
  if (!start_python()) return fallback;
  try {
    auto name = py::module_::import("torch").attr("cuda").attr("get_device_name")(device).cast<std::string>();
    return name + " (device " + std::to_string(device) + ")";
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace crucible::kernels
