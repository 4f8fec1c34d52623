// The device verifier: refuses, with the kernel and the loop or buffer named, what cannot run on a
// device (statements outside every thread extent, more threads or shared memory per block than
// the device has, a barrier that not every thread of a block reaches, a warp shuffle that not
// every lane of a warp runs) before any code is printed.
#pragma once
#include <cstdint>

#include "tensor_ir/transforms/split_host_device.h"

namespace tessera::tensor_ir {

// What a device allows one block. Targets fill it from their defaults or from a device's
// runtime::DeviceAttributes.
struct DeviceLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_memory_bytes = 48 * 1024;
};

void verify_device_program(const DeviceProgram& program, const DeviceLimits& limits);

}  // namespace tessera::tensor_ir
