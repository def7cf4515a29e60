# LibTorch for ddplint-verify, as the interface target `ddplint_torch`.
# 1. find_package(Torch): Debian's libtorch-dev (PyTorch 1.13, CPU; its c10d
#    Gloo backend needs libgloo-dev and USE_C10D_GLOO), or any LibTorch
#    distribution on CMAKE_PREFIX_PATH.
# 2. Otherwise a pip wheel, by hand: its CMake config demands a CUDA toolkit,
#    so the headers and libraries are taken from the wheel given the Python
#    interpreter (DDPLINT_PYTHON, default python3). NCCL is not linked: it is
#    loaded at run time (verify/cuda_driver.cpp).
add_library(ddplint_torch INTERFACE)
find_package(Torch QUIET)
if(Torch_FOUND)
  message(STATUS "ddplint-verify: LibTorch from find_package(Torch) (${TORCH_INSTALL_PREFIX})")
  target_link_libraries(ddplint_torch INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(ddplint_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
else()
  set(DDPLINT_PYTHON "python3" CACHE STRING "Python interpreter whose torch wheel ddplint-verify builds against")
  execute_process(
    COMMAND ${DDPLINT_PYTHON} -c "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
    OUTPUT_VARIABLE _torch_out RESULT_VARIABLE _torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR "DDPLINT_VERIFY=ON needs LibTorch: install Debian's libtorch-dev (and libgloo-dev), "
                        "put LibTorch on CMAKE_PREFIX_PATH, or set DDPLINT_PYTHON to a Python with torch installed")
  endif()
  string(REPLACE "\n" ";" _torch_out "${_torch_out}")
  list(GET _torch_out 0 _torch_dir)
  list(GET _torch_out 1 _torch_abi)
  message(STATUS "ddplint-verify: LibTorch from the pip wheel in ${_torch_dir}")
  target_include_directories(ddplint_torch SYSTEM INTERFACE "${_torch_dir}/include"
                                                            "${_torch_dir}/include/torch/csrc/api/include")
  foreach(_lib torch torch_cpu c10 torch_cuda c10_cuda)
    if(EXISTS "${_torch_dir}/lib/lib${_lib}.so")
      target_link_libraries(ddplint_torch INTERFACE "${_torch_dir}/lib/lib${_lib}.so")
    endif()
  endforeach()
  target_link_options(ddplint_torch INTERFACE "-Wl,-rpath,${_torch_dir}/lib" "-Wl,--no-as-needed")
  target_compile_definitions(ddplint_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_torch_abi} USE_C10D_GLOO)
endif()
# Gloo: Debian ships it separately (libgloo-dev); the wheel bundles it in libtorch_cpu
find_path(GLOO_INCLUDE_DIR gloo/config.h)
if(GLOO_INCLUDE_DIR)
  target_compile_definitions(ddplint_torch INTERFACE USE_C10D_GLOO)
endif()
