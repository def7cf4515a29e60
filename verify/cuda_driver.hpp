// The few CUDA driver and NCCL entry points ddplint-verify needs, loaded at
// run time with dlopen: building needs neither CUDA nor NCCL headers, and a
// machine without them still runs the CPU measurements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ddplint::verify {

/// libcuda.so.1 (the driver, present wherever a GPU works): synchronisation
/// and memory figures for the context PyTorch made current.
struct CudaDriver {
  bool loaded = false;
  std::string error;  ///< why it is not loaded
  int (*cuInit)(unsigned) = nullptr;
  int (*cuCtxSynchronize)() = nullptr;
  int (*cuMemGetInfo)(std::size_t* free, std::size_t* total) = nullptr;
  int (*cuDeviceGetCount)(int*) = nullptr;
  int (*cuDeviceGet)(int* device, int ordinal) = nullptr;
  int (*cuDeviceGetName)(char* name, int len, int device) = nullptr;
  int (*cuDeviceTotalMem)(std::size_t* bytes, int device) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void** ctx, int device) = nullptr;
  int (*cuDevicePrimaryCtxRelease)(int device) = nullptr;
  int (*cuCtxSetCurrent)(void* ctx) = nullptr;
  /// Loads the driver (once). `loaded` false and `error` set when it cannot.
  static CudaDriver& get();
};

/// NCCL, loaded from $DDPLINT_NCCL_LIBRARY or else `libnccl.so.2` (the name
/// the nvidia-nccl wheel ships; no unversioned name is needed).
/// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html
struct Nccl {
  static constexpr int kFloat32 = 7;   ///< ncclFloat32
  static constexpr int kBfloat16 = 9;  ///< ncclBfloat16 (NCCL 2.10+)
  static constexpr int kSum = 0;       ///< ncclSum
  struct UniqueId {
    char internal[128];
  };
  bool loaded = false;
  std::string error;
  int (*GetUniqueId)(UniqueId*) = nullptr;
  int (*CommInitRank)(void** comm, int nranks, UniqueId id, int rank) = nullptr;
  int (*AllReduce)(const void* send, void* recv, std::size_t count, int datatype, int op, void* comm,
                   void* stream) = nullptr;
  int (*CommDestroy)(void* comm) = nullptr;
  static Nccl& get();
};

}  // namespace ddplint::verify
