#include "schedule/templates/default.h"

#include "schedule/templates/cpu.h"
#include "schedule/templates/gpu.h"

namespace tessera::schedule {

std::unique_ptr<Schedule> default_schedule(const std::vector<Tensor>& outputs, const Tensor& anchor,
                                           const HardwareParams& hardware) {
  if (hardware.is_gpu()) return default_gpu_schedule(outputs, hardware);
  return default_cpu_schedule(outputs, anchor, hardware);
}

}  // namespace tessera::schedule
