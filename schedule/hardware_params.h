// What the default schedules, the graph's layout choices and the tuner's sketch rules need to
// know of the machine a kernel is built for: its vector registers (width and count), or a GPU's
// threads, shared memory and warps. The target fills it (targets::Target::hardware(), from the
// CPU's features or the device's limits); nothing below the targets assumes a width, and a
// schedule made without it cannot use the default templates.
#pragma once
#include "runtime/data_type.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::schedule {

// What GPU schedules size blocks by (targets fill it from the device's or the target's limits).
struct GpuParams {
  int64_t max_threads_per_block = 0;  // 0: not a GPU
  int64_t max_shared_memory_bytes = 0;
  int warp_size = 1;  // lanes that shuffle together; 1 where the device has no warps to use
  // Shared memory on the chip (runtime/device_api.h); false where global memory stands in for it.
  bool dedicated_shared_memory = true;
};

struct HardwareParams {
  tensor_ir::ops::Registers registers;  // unset (0): not known, which templates refuse
  GpuParams gpu;                        // set for GPU targets, whose schedules bind threads

  bool is_gpu() const { return gpu.max_threads_per_block > 0; }

  bool defined() const { return registers.vector_bytes > 0 && registers.count > 0; }
  // Lanes of one register for elements of `dtype` (float16 computes in float32 registers, bool
  // is stored as bytes); throws when the hardware is not known.
  int lanes(runtime::DataType dtype) const;
};

}  // namespace tessera::schedule
