// The CPU as a DeviceAPI: host memory, synchronous copies, wall-clock events. CPU kernels are the
// LLVM code of runtime::Module, so it loads no device code.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "runtime/device_api.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

namespace {

struct CPUEvent : DeviceEvent {
  CPUEvent() : DeviceEvent(Device::cpu()) {}
  std::chrono::steady_clock::time_point time = std::chrono::steady_clock::now();
};

class CPUDeviceAPI final : public DeviceAPI {
 public:
  CPUDeviceAPI() : DeviceAPI(Device::cpu()) {
    attributes_.name = "cpu";
    attributes_.compute_units = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  const DeviceAttributes& attributes() const override { return attributes_; }

  void* alloc(size_t bytes, size_t alignment) override {
    check_alignment(alignment, alignment);
    alignment = std::max(alignment, sizeof(void*));
    // aligned_alloc wants a multiple of the alignment, and 0 bytes may give a null pointer.
    size_t rounded = std::max<size_t>(1, (bytes + alignment - 1) / alignment) * alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void free(void* handle) override { std::free(handle); }
  void fill_zero(void* handle, size_t offset, size_t bytes) override {
    if (bytes) std::memset(static_cast<char*>(handle) + offset, 0, bytes);
  }
  void copy_from_host(const void* src, void* dst, size_t dst_offset, size_t bytes) override {
    if (bytes) std::memcpy(static_cast<char*>(dst) + dst_offset, src, bytes);
  }
  void copy_to_host(const void* src, size_t src_offset, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(dst, static_cast<const char*>(src) + src_offset, bytes);
  }
  void copy_within(const void* src, size_t src_offset, void* dst, size_t dst_offset, size_t bytes) override {
    if (bytes) std::memmove(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset, bytes);
  }
  void synchronize() override {}

  std::unique_ptr<DeviceModule> load_module(const std::string&, DeviceCodeFormat) override {
    fail("cpu(0): CPU kernels are compiled by LLVM into a runtime::Module; DeviceAPI loads OpenCL C and PTX only");
  }

  std::unique_ptr<DeviceEvent> record_event() override { return std::make_unique<CPUEvent>(); }
  double elapsed_ms(const DeviceEvent& start, const DeviceEvent& end) override {
    return std::chrono::duration<double, std::milli>(own_event<CPUEvent>(end).time - own_event<CPUEvent>(start).time)
        .count();
  }

 private:
  DeviceAttributes attributes_;
};

}  // namespace

std::unique_ptr<DeviceAPI> make_cpu_device_api(int id) {
  if (id != 0) fail(Device{DeviceType::CPU, id}.str(), ": the CPU is device 0 (its cores are one device)");
  return std::make_unique<CPUDeviceAPI>();
}

}  // namespace tessera::runtime
