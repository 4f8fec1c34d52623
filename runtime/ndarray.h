// A dense, row-major n-dimensional array on a device. Memory Tessera allocates is 64-byte aligned
// (one cache line, one AVX-512 vector), which generated kernels assume; CPU arrays can also view
// memory owned by someone else (a numpy array) without copying, kept alive through `owner`. An
// array on another device owns device memory through its DeviceAPI, which the host cannot address:
// data() refuses it, device_data() gives its handle, copy_to() moves it.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/data_type.h"
#include "runtime/device.h"

namespace tessera::runtime {

constexpr size_t kAllocAlignment = 64;

class NDArray {
 public:
  NDArray() = default;
  // Fresh, zero-filled, 64-byte aligned storage on `device` (throws, naming it, if it is missing).
  static NDArray empty(std::vector<int64_t> shape, DataType dtype, Device device = Device::cpu());
  // The same storage left as the allocator gives it, for an array its first writer fills whole
  // (an executor's outputs, which each run's steps write: zeroing them cost a decoding step with
  // a key/value cache as much as a third of its kernels' time).
  static NDArray uninitialized(std::vector<int64_t> shape, DataType dtype, Device device = Device::cpu());
  // A view of memory owned by `owner` (which must outlive nothing: the view holds it); on a device,
  // `data` is its handle (a CUDA array's address, shared through DLPack).
  static NDArray view(void* data, std::vector<int64_t> shape, DataType dtype, std::shared_ptr<void> owner,
                      Device device = Device::cpu());

  bool defined() const { return data_ != nullptr || numel() == 0; }
  // The elements in host memory; throws for arrays on other devices rather than hand out a device
  // handle as a host pointer.
  void* data() const {
    if (device_.type != DeviceType::CPU) not_in_host_memory();
    return data_;
  }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  // The device's handle to the elements: a host pointer on the CPU, a cl_mem on OpenCL, a
  // CUdeviceptr on CUDA (what DeviceAPI and kernel launches take).
  void* device_data() const { return data_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_.element_bytes(); }
  // CPU and CUDA arrays may view unaligned memory; an OpenCL buffer is no address, and its own.
  bool is_aligned() const {
    return device_.type == DeviceType::OpenCL || reinterpret_cast<uintptr_t>(data_) % kAllocAlignment == 0;
  }

  // The same storage from byte `offset` on, seen with another shape and dtype, on any device (an
  // offset only where the storage is an address: not on OpenCL); throws if it would need more
  // bytes than this array has.
  NDArray view_as(std::vector<int64_t> shape, DataType dtype, size_t offset = 0) const;
  // A new array on `device` holding a copy of the elements.
  NDArray copy_to(Device device) const;
  // Copies `src`'s elements (same shape and dtype, any device) into this array.
  void copy_from(const NDArray& src) const;

  std::string shape_str() const;

 private:
  static NDArray allocate(std::vector<int64_t> shape, DataType dtype, Device device, bool zeroed);
  [[noreturn]] void not_in_host_memory() const;

  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  std::vector<int64_t> shape_;
  DataType dtype_;
  Device device_;
};

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace tessera::runtime
