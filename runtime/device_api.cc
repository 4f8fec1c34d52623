#include "runtime/device_api.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

KernelArg KernelArg::array(const NDArray& a) { return buffer(a.device_data(), a.device()); }

void DeviceAPI::check_alignment(size_t alignment, size_t guaranteed) const {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail(device_.str(), ": alignment ", alignment, " is not a power of two");
  if (alignment > guaranteed)
    fail(device_.str(), ": alignment ", alignment, " exceeds the ", guaranteed, " bytes its allocations guarantee");
}

void DeviceAPI::check_event(const DeviceEvent& event) const {
  if (!(event.device() == device_))
    fail(device_.str(), ": an event recorded on ", event.device().str(), " cannot be timed here");
}

Device Device::parse(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  Device d;
  const DeviceType kinds[] = {DeviceType::CPU, DeviceType::OpenCL, DeviceType::CUDA};
  const auto known =
      std::find_if(std::begin(kinds), std::end(kinds), [&](DeviceType t) { return kind == device_type_name(t); });
  if (known == std::end(kinds))
    fail("unknown device kind '", kind, "' (expected cpu, opencl or cuda, optionally with :ID, as in cuda:1)");
  d.type = *known;
  if (colon != std::string::npos) {
    const std::string id = text.substr(colon + 1);
    char* end = nullptr;
    const long n = std::strtol(id.c_str(), &end, 10);
    if (id.empty() || *end != '\0' || n < 0 || n > 1 << 20)
      fail("device '", text, "': the id after ':' must be a number from 0");
    d.id = static_cast<int>(n);
  }
  return d;
}

DeviceAPI& DeviceAPI::get(Device device) {
  // Created once and never destroyed: a driver may already be unloaded when static destructors
  // run at exit, and releasing its objects then would crash.
  static std::mutex mutex;
  static auto* apis = new std::map<std::pair<DeviceType, int>, DeviceAPI*>;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(device.type, device.id);
  if (auto it = apis->find(key); it != apis->end()) return *it->second;
  if (device.id < 0) fail(device.str(), ": device ids start at 0");
  std::unique_ptr<DeviceAPI> api;
  switch (device.type) {
    case DeviceType::CPU:
      api = make_cpu_device_api(device.id);
      break;
    case DeviceType::OpenCL:
      api = make_opencl_device_api(device.id);
      break;
    case DeviceType::CUDA:
      api = make_cuda_device_api(device.id);
      break;
  }
  TESSERA_CHECK(api, "no implementation for ", device.str());
  return *((*apis)[key] = api.release());
}

bool DeviceAPI::exists(Device device) {
  try {
    get(device);
    return true;
  } catch (const Error&) {
    return false;
  }
}

int DeviceAPI::count(DeviceType type) {
  try {
    switch (type) {
      case DeviceType::CPU:
        return 1;
      case DeviceType::OpenCL:
        return opencl_device_count();
      case DeviceType::CUDA:
        return cuda_device_count();
    }
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace tessera::runtime
