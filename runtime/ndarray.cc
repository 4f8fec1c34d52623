#include "runtime/ndarray.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/error.h"

namespace tessera::runtime {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int64_t NDArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

std::string NDArray::shape_str() const { return runtime::shape_str(shape_); }

NDArray NDArray::empty(std::vector<int64_t> shape, DataType dtype, Device device) {
  if (device.type != DeviceType::CPU) fail("NDArray::empty: device ", device.str(), " has no allocator yet");
  if (dtype.is_vector() || dtype.is_handle()) fail("NDArray::empty: invalid element type ", dtype.str());
  NDArray a;
  for (int64_t d : shape)
    if (d < 0) fail("NDArray::empty: negative dimension in shape ", runtime::shape_str(shape));
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  a.device_ = device;
  // Round up so aligned_alloc's size requirement holds, and never ask for 0 bytes.
  size_t bytes = (a.nbytes() + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
  if (bytes == 0) bytes = kAllocAlignment;
  void* p = std::aligned_alloc(kAllocAlignment, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  a.owner_ = std::shared_ptr<void>(p, std::free);
  a.data_ = p;
  return a;
}

NDArray NDArray::view(void* data, std::vector<int64_t> shape, DataType dtype,
                      std::shared_ptr<void> owner) {
  NDArray a;
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  a.data_ = data;
  a.owner_ = std::move(owner);
  return a;
}

}  // namespace tessera::runtime
