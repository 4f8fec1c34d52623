#include "runtime/ndarray.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "runtime/shape_size.h"

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
  return allocate(std::move(shape), dtype, device, /*zeroed=*/true);
}

NDArray NDArray::uninitialized(std::vector<int64_t> shape, DataType dtype, Device device) {
  return allocate(std::move(shape), dtype, device, /*zeroed=*/false);
}

NDArray NDArray::allocate(std::vector<int64_t> shape, DataType dtype, Device device, bool zeroed) {
  if (dtype.is_vector() || dtype.is_handle()) fail("NDArray::empty: invalid element type ", dtype.str());
  checked_nbytes(shape, dtype, "NDArray::empty");
  NDArray a;
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  a.device_ = device;
  if (device.type != DeviceType::CPU) {
    DeviceAPI& api = DeviceAPI::get(device);
    void* handle = api.alloc(a.nbytes(), kAllocAlignment);
    a.owner_ = std::shared_ptr<void>(handle, [&api](void* h) { api.free(h); });
    a.data_ = handle;
    if (zeroed) api.fill_zero(handle, 0, a.nbytes());
    return a;
  }
  // Host memory directly rather than through the CPU's DeviceAPI: the executor allocates often.
  // Round up so aligned_alloc's size requirement holds, and never ask for 0 bytes.
  size_t bytes = (a.nbytes() + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
  if (bytes == 0) bytes = kAllocAlignment;
  void* p = std::aligned_alloc(kAllocAlignment, bytes);
  if (!p) throw std::bad_alloc();
  if (zeroed) std::memset(p, 0, bytes);
  a.owner_ = std::shared_ptr<void>(p, std::free);
  a.data_ = p;
  return a;
}

void NDArray::not_in_host_memory() const {
  fail("the array ", shape_str(), " ", dtype_.str(), " is on ", device_.str(),
       ", whose memory the host cannot address: copy it to the CPU first (copy_to)");
}

NDArray NDArray::copy_to(Device device) const {
  NDArray out = empty(shape_, dtype_, device);
  out.copy_from(*this);
  return out;
}

void NDArray::copy_from(const NDArray& src) const {
  if (src.shape_ != shape_ || src.dtype_ != dtype_)
    fail("NDArray::copy_from: expected shape ", shape_str(), " ", dtype_.str(), ", got ", src.shape_str(), " ",
         src.dtype_.str());
  const size_t bytes = nbytes();
  if (bytes == 0) return;
  const bool from_host = src.device_.type == DeviceType::CPU, to_host = device_.type == DeviceType::CPU;
  if (from_host && to_host) {
    std::memmove(data_, src.data_, bytes);
  } else if (from_host) {
    DeviceAPI::get(device_).copy_from_host(src.data_, data_, 0, bytes);
  } else if (to_host) {
    DeviceAPI::get(src.device_).copy_to_host(src.data_, 0, data_, bytes);
  } else if (src.device_ == device_) {
    DeviceAPI::get(device_).copy_within(src.data_, 0, data_, 0, bytes);
  } else {
    // Between two devices: through the host, which both can reach.
    copy_from(src.copy_to(Device::cpu()));
  }
}

NDArray NDArray::view(void* data, std::vector<int64_t> shape, DataType dtype, std::shared_ptr<void> owner,
                      Device device) {
  NDArray a;
  a.device_ = device;
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  a.data_ = data;
  a.owner_ = std::move(owner);
  return a;
}

NDArray NDArray::view_as(std::vector<int64_t> shape, DataType dtype, size_t offset) const {
  if (offset != 0 && device_.type == DeviceType::OpenCL) fail("an OpenCL buffer cannot be viewed from an offset");
  NDArray a = view(static_cast<char*>(data_) + offset, std::move(shape), dtype, owner_, device_);
  if (offset + a.nbytes() > nbytes())
    fail("a view of ", a.dtype().str(), a.shape_str(), " from byte ", offset, " needs ", offset + a.nbytes(),
         " bytes; the array (", dtype_.str(), shape_str(), ") has ", nbytes());
  return a;
}

}  // namespace tessera::runtime
