// Schedules people register for an op or a workload (a C++ or Python function over the compute
// definition, like a CPU template). build() uses one, when registered, instead of the default
// template; a tuning record of the workload still wins.
#pragma once
#include <string>

#include "schedule/templates/cpu.h"

namespace tessera::schedule {

// `key`: an op name ("conv"), a fused kernel's description ("fused_conv_add_relu") or a workload
// key. Registering a key again replaces its schedule.
void register_custom_schedule(const std::string& key, CpuTemplate schedule);
// The schedule registered under `key`, or null.
const CpuTemplate* find_custom_schedule(const std::string& key);

}  // namespace tessera::schedule
