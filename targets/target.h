// What code is generated for: a target kind and its options, parsed from the strings users write
// (`llvm -mcpu=skylake-avx512`, `cuda -arch=sm_90`). The canonical string (str()) is what tuning
// records are keyed by, so equal targets must print equally.
#pragma once
#include <string>
#include <vector>

#include "runtime/device.h"
#include "schedule/hardware_params.h"

namespace tessera::targets {

struct Target {
  std::string kind;                // "llvm", "c", "opencl" or "cuda"
  std::string mtriple;             // llvm: empty means the host's
  std::string mcpu;                // llvm: empty means the host's (or "generic" for a foreign triple)
  std::vector<std::string> mattr;  // llvm: "+avx2", "-avx512f"; later entries override earlier ones
  std::string arch;                // cuda: "sm_90"; empty means the device's
  // opencl: the device, by its name as device_slug() spells it ("pthread-skylake-avx512-amd-epyc");
  // empty means the first. Tuning records are keyed by it, so times measured on one OpenCL
  // device are not taken for another's.
  std::string device;

  // Accepts `kind -opt=value ...`; throws tessera::Error naming an unknown kind or option, an
  // option given twice or a malformed value.
  static Target parse(const std::string& text);
  // llvm with the host's triple, CPU name and CPU features spelled out.
  static Target host();

  // For llvm, the host's triple where unset and, for the host's architecture with no CPU given,
  // its CPU name and the features it has beyond those the name implies (before the features
  // given): the code an unset CPU gets, spelled out. Tuning records are keyed by it, so records
  // made on one CPU, or with another vector width, are not applied on another.
  Target with_host_defaults() const;

  // What default schedules and layouts size themselves by: for llvm, the widest vector registers
  // the CPU's features enable (AVX-512: 32 of 64 bytes; AVX/AVX2: 16 of 32; SSE: 16 of 16;
  // AArch64 NEON: 32 of 16), the host's filled in where the target leaves them; for c, the
  // host's. Throws for kinds without a CPU description.
  schedule::HardwareParams hardware() const;

  // The lanes that run in lockstep and exchange values by shuffles: 32 for cuda (every NVIDIA
  // architecture), 1 for the others (OpenCL C 1.2 has no portable shuffle; CPUs have no threads
  // in blocks).
  int warp_size() const { return kind == "cuda" ? 32 : 1; }
  // The kind of device the code runs on: the CPU for llvm and c.
  runtime::DeviceType device_type() const {
    return kind == "cuda" ? runtime::DeviceType::CUDA
                          : kind == "opencl" ? runtime::DeviceType::OpenCL : runtime::DeviceType::CPU;
  }

  // kind, then the options that are set, in a fixed order; parse(str()) == *this.
  std::string str() const;
  bool operator==(const Target& o) const {
    return kind == o.kind && mtriple == o.mtriple && mcpu == o.mcpu && mattr == o.mattr && arch == o.arch &&
           device == o.device;
  }
  bool operator!=(const Target& o) const { return !(*this == o); }
};

// A device name as a target option: lower case, each run of other characters than letters, digits,
// '.' and '_' one '-', none at either end.
std::string device_slug(const std::string& name);

}  // namespace tessera::targets
