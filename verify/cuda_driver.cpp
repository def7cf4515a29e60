#include "verify/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace ddplint::verify {

namespace {
template <class F>
bool bind(void* lib, const char* name, F& out, std::string& error) {
  out = reinterpret_cast<F>(::dlsym(lib, name));
  if (out == nullptr && error.empty()) error = std::string("symbol ") + name + " missing";
  return out != nullptr;
}
}  // namespace

CudaDriver& CudaDriver::get() {
  static CudaDriver d = [] {
    CudaDriver c;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) {
      c.error = "the CUDA driver (libcuda.so.1) is not loadable";
      return c;
    }
    bool ok = bind(lib, "cuInit", c.cuInit, c.error) & bind(lib, "cuCtxSynchronize", c.cuCtxSynchronize, c.error) &
              bind(lib, "cuMemGetInfo_v2", c.cuMemGetInfo, c.error) &
              bind(lib, "cuDeviceGetCount", c.cuDeviceGetCount, c.error) & bind(lib, "cuDeviceGet", c.cuDeviceGet, c.error) &
              bind(lib, "cuDeviceGetName", c.cuDeviceGetName, c.error) &
              bind(lib, "cuDeviceTotalMem_v2", c.cuDeviceTotalMem, c.error) &
              bind(lib, "cuDevicePrimaryCtxRetain", c.cuDevicePrimaryCtxRetain, c.error) &
              bind(lib, "cuDevicePrimaryCtxRelease_v2", c.cuDevicePrimaryCtxRelease, c.error) &
              bind(lib, "cuCtxSetCurrent", c.cuCtxSetCurrent, c.error);
    c.loaded = ok && c.cuInit(0) == 0;
    if (ok && !c.loaded) c.error = "cuInit failed";
    return c;
  }();
  return d;
}

Nccl& Nccl::get() {
  static Nccl n = [] {
    Nccl c;
    const char* path = std::getenv("DDPLINT_NCCL_LIBRARY");
    void* lib = ::dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) {
      c.error = std::string("NCCL is not loadable (") + (path && *path ? path : "libnccl.so.2") +
                "; set DDPLINT_NCCL_LIBRARY to the nvidia-nccl wheel's nvidia/nccl/lib/libnccl.so.2)";
      return c;
    }
    c.loaded = bind(lib, "ncclGetUniqueId", c.GetUniqueId, c.error) &
               bind(lib, "ncclCommInitRank", c.CommInitRank, c.error) &
               bind(lib, "ncclAllReduce", c.AllReduce, c.error) & bind(lib, "ncclCommDestroy", c.CommDestroy, c.error);
    return c;
  }();
  return n;
}

}  // namespace ddplint::verify
