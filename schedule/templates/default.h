// The default schedule of a kernel: the GPU template (gpu.h) for a GPU's hardware, the CPU
// templates (cpu.h) otherwise. What builds use without a tuning record, and what tuning measures
// every candidate against.
#pragma once
#include <memory>
#include <vector>

#include "schedule/schedule.h"

namespace tessera::schedule {

// `anchor` is the CPU templates' (the stage a template schedules); a GPU's template needs none.
std::unique_ptr<Schedule> default_schedule(const std::vector<Tensor>& outputs, const Tensor& anchor,
                                           const HardwareParams& hardware);

}  // namespace tessera::schedule
