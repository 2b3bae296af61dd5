# Every dependency comes from Debian 12 packages (scripts/install_deps installs them). On the GPU machine the
# same packages are unpacked under CRUCIBLE_DEPS and LibTorch is the CUDA build of the installed PyTorch.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

# CAF 0.17 ships no CMake config.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(crucible_caf INTERFACE)
target_include_directories(crucible_caf SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(crucible_caf INTERFACE ${CAF_IO_LIBRARY} ${CAF_CORE_LIBRARY} Threads::Threads)

# ZeroMQ + cppzmq (header only; Debian's libzmq has no draft API).
find_path(ZMQ_INCLUDE_DIR zmq.h REQUIRED)
find_path(CPPZMQ_INCLUDE_DIR zmq.hpp REQUIRED)
find_library(ZMQ_LIBRARY zmq REQUIRED)
add_library(crucible_zmq INTERFACE)
target_include_directories(crucible_zmq SYSTEM INTERFACE ${ZMQ_INCLUDE_DIR} ${CPPZMQ_INCLUDE_DIR})
target_link_libraries(crucible_zmq INTERFACE ${ZMQ_LIBRARY})

find_package(msgpack CONFIG REQUIRED)          # target msgpackc-cxx
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Boost 1.74 REQUIRED)

# The byte-level BPE tokenizer (policies/lm/bpe_tokenizer): PCRE2 with 8-bit code units compiles the
# pre-tokenizer's split patterns; ICU's common library (icuuc + icudata) does NFC. Found by path, like CAF, so
# packages unpacked with dpkg -x (the GPU machine) are found through CMAKE_INCLUDE_PATH / CMAKE_LIBRARY_PATH.
find_path(PCRE2_INCLUDE_DIR pcre2.h REQUIRED)
find_library(PCRE2_LIBRARY pcre2-8 REQUIRED)
add_library(crucible_pcre2 INTERFACE)
target_include_directories(crucible_pcre2 SYSTEM INTERFACE ${PCRE2_INCLUDE_DIR})
target_link_libraries(crucible_pcre2 INTERFACE ${PCRE2_LIBRARY})
target_compile_definitions(crucible_pcre2 INTERFACE PCRE2_CODE_UNIT_WIDTH=8)
find_package(ICU REQUIRED COMPONENTS uc data)  # ICU::uc, ICU::data

# LibTorch: 1.13 from Debian (CPU), 2.x on the GPU machine. Code must compile against both.
find_package(Torch REQUIRED)
if(Torch_VERSION AND Torch_VERSION VERSION_LESS 1.13)
  message(FATAL_ERROR "LibTorch >= 1.13 is needed, found ${Torch_VERSION}")
endif()
message(STATUS "LibTorch ${Torch_VERSION} (${TORCH_LIBRARIES})")
# PyTorch 2.x's libtorch_cpu exports std::filesystem symbols; resolved against it, std::filesystem::remove_all
# crashes. Putting libstdc++ first on the link line makes the standard library's own definitions win.
set(CRUCIBLE_TORCH_LIBS "-Wl,--no-as-needed" stdc++ "-Wl,--as-needed" ${TORCH_LIBRARIES})

# The yaml-cpp target is spelled differently across versions.
if(TARGET yaml-cpp::yaml-cpp)
  set(CRUCIBLE_YAML yaml-cpp::yaml-cpp)
else()
  set(CRUCIBLE_YAML yaml-cpp)
endif()

# The CUDA target: the eval worker's CUDA side links cudart and cuBLAS, and its one kernel file goes to PTX
# (kernels/CMakeLists.txt); candidates are compiled by nvcc at run time. LibTorch must then be a CUDA build.
if(CRUCIBLE_CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET torch_cuda AND NOT TORCH_LIBRARIES MATCHES "torch_cuda")
    message(FATAL_ERROR "CRUCIBLE_CUDA=ON needs a CUDA build of LibTorch (found ${TORCH_LIBRARIES})")
  endif()
endif()

# KernelBench's modules run in an embedded CPython beside its torch (kernels/python/): Debian's python3-torch
# drives the libtorch this build links. Without Python's embedding files, pybind11 or libtorch_python the
# KernelBench support is left out (the GPU machine's Python may lack them) and the rest builds as before.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)  # Debian's, whose dist-packages hold python3-torch
endif()
find_package(Python3 COMPONENTS Interpreter Development.Embed)
find_package(pybind11 CONFIG QUIET)
find_library(CRUCIBLE_TORCH_PYTHON torch_python HINTS ${TORCH_INSTALL_PREFIX}/lib)
if(Python3_Development.Embed_FOUND AND pybind11_FOUND AND CRUCIBLE_TORCH_PYTHON)
  set(CRUCIBLE_PYTHON ON)
  # Where the configured interpreter finds torch (a virtual environment's site-packages on the GPU machine),
  # added to the embedded interpreter's path when it starts (kernels/python/embedded_python.cpp).
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import site; print(':'.join(site.getsitepackages()))"
                  OUTPUT_VARIABLE CRUCIBLE_PYTHON_SITE OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  message(STATUS "KernelBench support: Python ${Python3_VERSION}, pybind11 ${pybind11_VERSION}, ${CRUCIBLE_TORCH_PYTHON}")
else()
  set(CRUCIBLE_PYTHON OFF)
  message(STATUS "KernelBench support left out (needs python3-dev, pybind11-dev and libtorch_python)")
endif()
