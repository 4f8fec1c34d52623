// Where a tensor lives and a kernel runs. Only the CPU executes kernels today; the other kinds
// name the devices that targets/ will generate code for.
#pragma once
#include <string>

namespace tessera::runtime {

enum class DeviceType { CPU, OpenCL, CUDA };

// "cpu", "opencl", "cuda": how targets and Device::parse spell the kind.
inline const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::OpenCL:
      return "opencl";
    case DeviceType::CUDA:
      return "cuda";
  }
  return "unknown";
}

struct Device {
  DeviceType type = DeviceType::CPU;
  int id = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  // "cpu", "opencl", "cuda", optionally with ":ID" ("cuda:1"); throws tessera::Error naming the
  // text otherwise.
  static Device parse(const std::string& text);
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && id == o.id; }
};

inline std::string Device::str() const { return std::string(device_type_name(type)) + "(" + std::to_string(id) + ")"; }

}  // namespace tessera::runtime
