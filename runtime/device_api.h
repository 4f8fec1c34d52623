// One interface to a device's memory and kernels, in the manner of TVM's DeviceAPI: allocate,
// copy, load device code and launch it, synchronize, time with device events, and the attributes
// that targets and schedules read (threads per block, shared memory, warp size). CPU, OpenCL and
// CUDA implement it; the OpenCL and CUDA drivers are opened at run time, never linked.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/device.h"

namespace tessera::runtime {

class NDArray;

// What code generators and schedules need to know of a device.
struct DeviceAttributes {
  std::string name;
  // CUDA: threads per block; OpenCL: work-items per work-group; CPU: 1.
  int max_threads_per_block = 1;
  // CUDA: shared memory per block (without opting in to more); OpenCL: local memory; bytes.
  int64_t max_shared_memory_per_block = 0;
  // Whether that memory is on the chip (every CUDA GPU; OpenCL's CL_LOCAL), rather than global
  // memory standing in for it (OpenCL's CL_GLOBAL, as on CPU devices like PoCL's), where copying
  // data into it and the barriers around it cost more than they save.
  bool dedicated_shared_memory = false;
  // CUDA: the warp. OpenCL has no device-wide sub-group size (it is a property of each compiled
  // kernel), so 1, as in TVM.
  int warp_size = 1;
  // Streaming multiprocessors, OpenCL compute units, CPU hardware threads.
  int compute_units = 1;
  int64_t global_memory_bytes = 0;
  // CUDA only (0 elsewhere): sm_90 is 9.0.
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

// Grid and block extents of a launch, CUDA's way: OpenCL's global size is grid * block, its
// local size block.
struct LaunchConfig {
  std::array<size_t, 3> grid{1, 1, 1};
  std::array<size_t, 3> block{1, 1, 1};
  size_t dynamic_shared_bytes = 0;  // CUDA's extern __shared__ memory
};

// One argument of a kernel launch: a device buffer or a scalar by value (at most 8 bytes). A
// buffer remembers its device, so a launch refuses memory of another device instead of handing
// its handle to the kernel.
class KernelArg {
 public:
  static KernelArg array(const NDArray& a);
  static KernelArg buffer(void* handle, Device device) {
    KernelArg k(&handle, sizeof handle);
    k.is_buffer_ = true;
    k.device_ = device;
    return k;
  }
  template <typename T>
  static KernelArg scalar(T value) {
    static_assert(std::is_arithmetic_v<T> && sizeof(T) <= 8, "kernel scalars are numbers of at most 8 bytes");
    return KernelArg(&value, sizeof value);
  }

  const void* value() const { return bytes_; }
  size_t size() const { return size_; }
  bool is_buffer() const { return is_buffer_; }
  Device device() const { return device_; }

 private:
  KernelArg(const void* value, size_t size) : size_(size) { std::memcpy(bytes_, value, size); }
  alignas(8) unsigned char bytes_[8] = {};
  size_t size_;
  bool is_buffer_ = false;
  Device device_;
};

// A kernel of a loaded DeviceModule; it keeps the module loaded.
class DeviceFunction {
 public:
  virtual ~DeviceFunction() = default;
  // Queues the kernel on its device (asynchronous: DeviceAPI::synchronize waits for it).
  virtual void launch(const LaunchConfig& config, const std::vector<KernelArg>& args) = 0;
};

enum class DeviceCodeFormat { OpenCLSource, PTX };

// Device code loaded onto one device: an OpenCL program or a CUDA module.
class DeviceModule {
 public:
  virtual ~DeviceModule() = default;
  // The kernel `name`; throws, naming it, when the module has none.
  virtual std::shared_ptr<DeviceFunction> function(const std::string& name) = 0;
};

// A point in a device's queue of work; two of them time what ran in between.
class DeviceEvent {
 public:
  explicit DeviceEvent(Device device) : device_(device) {}
  virtual ~DeviceEvent() = default;
  Device device() const { return device_; }

 private:
  Device device_;
};

// A device's memory and kernels. Memory is named by a handle: a host pointer on the CPU, a cl_mem
// on OpenCL, a CUdeviceptr on CUDA; offsets are in bytes. Copies to and from the host return when
// the host memory may be reused or read; everything else is queued in order on the device's one
// queue (stream). Errors name the device: "opencl(0): clBuildProgram failed: ...".
class DeviceAPI {
 public:
  // The implementation for `device`, created on first use and kept for the process's life. Throws,
  // naming the device, when its driver or the device is missing ("no CUDA driver found (...)",
  // "opencl(3): only 1 OpenCL device(s) found").
  static DeviceAPI& get(Device device);
  static bool exists(Device device);
  // How many devices of `type` there are; 0 without a driver.
  static int count(DeviceType type);

  DeviceAPI(const DeviceAPI&) = delete;
  DeviceAPI& operator=(const DeviceAPI&) = delete;
  virtual ~DeviceAPI() = default;
  Device device() const { return device_; }
  virtual const DeviceAttributes& attributes() const = 0;

  // `alignment` is a power of two the device can promise (64 always); 0 bytes allocate a minimal
  // buffer, so every handle is a real one.
  virtual void* alloc(size_t bytes, size_t alignment) = 0;
  virtual void free(void* handle) = 0;
  virtual void fill_zero(void* handle, size_t offset, size_t bytes) = 0;
  virtual void copy_from_host(const void* src, void* dst, size_t dst_offset, size_t bytes) = 0;
  virtual void copy_to_host(const void* src, size_t src_offset, void* dst, size_t bytes) = 0;
  // Within this device's memory.
  virtual void copy_within(const void* src, size_t src_offset, void* dst, size_t dst_offset, size_t bytes) = 0;
  // Waits until all queued work is done.
  virtual void synchronize() = 0;

  // OpenCL C source on OpenCL devices, PTX on CUDA devices.
  virtual std::unique_ptr<DeviceModule> load_module(const std::string& code, DeviceCodeFormat format) = 0;

  virtual std::unique_ptr<DeviceEvent> record_event() = 0;
  // Milliseconds between two recorded events; waits for `end` to be reached.
  virtual double elapsed_ms(const DeviceEvent& start, const DeviceEvent& end) = 0;

 protected:
  explicit DeviceAPI(Device device) : device_(device) {}
  // Throws unless `alignment` is a power of two no larger than `guaranteed`.
  void check_alignment(size_t alignment, size_t guaranteed) const;
  // `event` as this implementation's event type, after checking it was recorded on this device.
  template <typename Event>
  const Event& own_event(const DeviceEvent& event) const {
    check_event(event);
    return static_cast<const Event&>(event);
  }

 private:
  void check_event(const DeviceEvent& event) const;
  Device device_;
};

// The implementations, each in its own file; they throw when the driver or device is missing.
std::unique_ptr<DeviceAPI> make_cpu_device_api(int id);
std::unique_ptr<DeviceAPI> make_opencl_device_api(int id);
std::unique_ptr<DeviceAPI> make_cuda_device_api(int id);
int opencl_device_count();  // throws when there is no OpenCL driver or platform
int cuda_device_count();    // throws when there is no CUDA driver

}  // namespace tessera::runtime
