#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include "runtime/error.h"
#include "runtime/load_once.h"

namespace tessera::runtime {

namespace {

using namespace cuda;

template <typename Fn>
void load_symbol(void* handle, Fn& fn, const char* name, const char* fallback = nullptr) {
  void* p = dlsym(handle, name);
  if (!p && fallback) p = dlsym(handle, fallback);
  if (!p) fail("libcuda.so.1 lacks ", name, ": the CUDA driver is too old for Tessera");
  fn = reinterpret_cast<Fn>(p);
}

DriverLibrary load() {
  // Never closed: device memory and modules live until the process ends.
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail("no CUDA driver found (libcuda.so.1 could not be loaded: ", dlerror(), ")");
  DriverLibrary d{};
  load_symbol(handle, d.cuInit, "cuInit");
  load_symbol(handle, d.cuGetErrorName, "cuGetErrorName");
  load_symbol(handle, d.cuGetErrorString, "cuGetErrorString");
  load_symbol(handle, d.cuDeviceGetCount, "cuDeviceGetCount");
  load_symbol(handle, d.cuDeviceGet, "cuDeviceGet");
  load_symbol(handle, d.cuDeviceGetName, "cuDeviceGetName");
  load_symbol(handle, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  load_symbol(handle, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  load_symbol(handle, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  load_symbol(handle, d.cuCtxSetCurrent, "cuCtxSetCurrent");
  load_symbol(handle, d.cuCtxSynchronize, "cuCtxSynchronize");
  load_symbol(handle, d.cuMemAlloc, "cuMemAlloc_v2");
  load_symbol(handle, d.cuMemFree, "cuMemFree_v2");
  load_symbol(handle, d.cuMemsetD8Async, "cuMemsetD8Async");
  load_symbol(handle, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  load_symbol(handle, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  load_symbol(handle, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  load_symbol(handle, d.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  load_symbol(handle, d.cuModuleUnload, "cuModuleUnload");
  load_symbol(handle, d.cuModuleGetFunction, "cuModuleGetFunction");
  load_symbol(handle, d.cuLaunchKernel, "cuLaunchKernel");
  load_symbol(handle, d.cuEventCreate, "cuEventCreate");
  load_symbol(handle, d.cuEventRecord, "cuEventRecord");
  load_symbol(handle, d.cuEventSynchronize, "cuEventSynchronize");
  // CUDA 12.8 added the _v2 (same signature); older drivers have only the first.
  load_symbol(handle, d.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  load_symbol(handle, d.cuEventDestroy, "cuEventDestroy_v2");
  CUresult err = d.cuInit(0);
  if (err == CUDA_ERROR_NO_DEVICE) fail("no CUDA device found (libcuda.so.1 was loaded, but the driver sees no GPU)");
  if (err != CUDA_SUCCESS) {
    std::string why = std::to_string(err);
    const char* name = nullptr;
    if (d.cuGetErrorName(err, &name) == CUDA_SUCCESS && name) why = std::string(name) + " (" + why + ")";
    fail("the CUDA driver could not start (cuInit: ", why, ")");
  }
  return d;
}

}  // namespace

const DriverLibrary& cuda_driver() {
  static LoadOnce<DriverLibrary> once;
  return once.get(load);
}

std::string cuda_error_str(CUresult code) {
  const DriverLibrary& d = cuda_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  d.cuGetErrorName(code, &name);
  d.cuGetErrorString(code, &text);
  return std::string(name ? name : "CUDA error") + " (" + std::to_string(code) +
         (text ? std::string(": ") + text : "") + ")";
}

}  // namespace tessera::runtime
