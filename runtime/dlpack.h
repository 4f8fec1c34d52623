// DLPack: the common in-memory tensor structure through which frameworks (PyTorch, numpy, JAX,
// CuPy, TVM) share arrays without copying, and Tessera's NDArray on either side of it. The
// structs mirror the DLPack 1.0 ABI of include/dlpack/dlpack.h in https://github.com/dmlc/dlpack
// (Apache-2.0), field for field; Debian's libdlpack-dev (0.6) lacks the versioned tensor.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ndarray.h"

namespace tessera::runtime {

constexpr uint32_t kDLPackMajorVersion = 1;
constexpr uint32_t kDLPackMinorVersion = 0;

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);  // may be NULL
};

constexpr uint64_t kDLPackFlagReadOnly = 1u << 0;
constexpr uint64_t kDLPackFlagIsCopied = 1u << 1;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);  // may be NULL
  uint64_t flags;
  DLTensor dl_tensor;
};

// "cpu:0", "cuda:1", as error messages name a device.
std::string dlpack_device_str(DLDevice device);
// Tessera's element type of tensor `t`. Throws, naming what it found, unless `t` lies in CPU
// memory (for callers that read or write it in place) and has an element type Tessera has (bool
// also as TVM's one-byte uint1).
DataType dlpack_data_type(const DLTensor& t);
DLDataType to_dlpack(DataType t);

inline void* dlpack_data(const DLTensor& t) { return static_cast<char*>(t.data) + t.byte_offset; }
// The strides, in elements, of a dense row-major array of `shape` (NDArray's layout).
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
// True when the elements lie densely in row-major order, the only layout NDArray has.
bool dlpack_is_compact(const DLTensor& t);
// Copies the elements of `t`, whatever its strides, into / out of dense row-major memory.
void dlpack_copy_to_compact(const DLTensor& t, void* compact);
void dlpack_copy_from_compact(const void* compact, const DLTensor& t);

// Takes a producer's tensor over: an NDArray sharing its memory when that is compact (and, for
// versioned tensors, writable, since kernels write NDArrays), the deleter running when the last
// NDArray sharing it goes; otherwise a compact 64-byte aligned copy, the deleter running at once.
// Tensors in CUDA memory become CUDA arrays (compact ones only; read-only ones copied on the
// device). Throws (after running the deleter) for other devices, a CUDA device that is missing,
// element types Tessera lacks and unknown major versions.
NDArray from_dlpack(DLManagedTensor* managed);
NDArray from_dlpack(DLManagedTensorVersioned* managed);
// A managed tensor sharing `a`'s memory, which stays alive until the consumer runs the deleter.
// CPU and CUDA arrays only: an OpenCL buffer is no address a consumer could read.
DLManagedTensor* to_dlpack(const NDArray& a);
DLManagedTensorVersioned* to_dlpack_versioned(const NDArray& a, uint64_t flags = 0);

}  // namespace tessera::runtime
