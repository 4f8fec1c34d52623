// A dense, row-major n-dimensional array. Memory Tessera allocates is 64-byte aligned (one cache
// line, one AVX-512 vector), which generated kernels assume; arrays can also view memory owned
// by someone else (a numpy array) without copying, kept alive through `owner`.
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
  // Fresh, zero-filled, 64-byte aligned storage.
  static NDArray empty(std::vector<int64_t> shape, DataType dtype, Device device = Device::cpu());
  // A view of memory owned by `owner` (which must outlive nothing: the view holds it).
  static NDArray view(void* data, std::vector<int64_t> shape, DataType dtype,
                      std::shared_ptr<void> owner);

  bool defined() const { return data_ != nullptr || numel() == 0; }
  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_.element_bytes(); }
  bool is_aligned() const { return reinterpret_cast<uintptr_t>(data_) % kAllocAlignment == 0; }

  std::string shape_str() const;

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  std::vector<int64_t> shape_;
  DataType dtype_;
  Device device_;
};

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace tessera::runtime
