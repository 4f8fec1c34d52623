// Default GPU schedules (opencl, cuda) for operator compute definitions, sized by the target's
// GpuParams (threads per block, warp size), whatever the operator:
//   * injective stages that are not outputs inline into their consumers;
//   * a reduction with a long reduction and few outputs gets a block per output element, its
//     threads sharing the reduction (rfactor; warp shuffles on cuda, a tree on OpenCL);
//   * every other stage gets a thread per output element (its loops fused, split into blocks),
//     its reductions running in the thread; a reduction feeding only a consumer of its own shape
//     is computed inside that consumer's thread instead of a kernel of its own.
// Each stage left at the root becomes a kernel of its own, launched in order (a scalar that
// reduces nothing runs on one thread).
#pragma once
#include <memory>
#include <vector>

#include "schedule/schedule.h"

namespace tessera::schedule {

std::unique_ptr<Schedule> default_gpu_schedule(const std::vector<Tensor>& outputs, const HardwareParams& hardware);

}  // namespace tessera::schedule
