// Schedules people register for an op or a workload (a C++ or Python function over the compute
// definition, like a CPU template). build() uses one, when registered, instead of the default
// template, unless the tuning database holds a record of the workload measured faster.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "schedule/templates/cpu.h"

namespace tessera::schedule {

// `key`: an op name ("conv"), a fused kernel's description ("fused_conv_add_relu") or a workload
// key. Registering a key again replaces its schedule.
void register_custom_schedule(const std::string& key, CpuTemplate schedule);
// The schedule registered under `key`, or null.
const CpuTemplate* find_custom_schedule(const std::string& key);
// The kernel computing `outputs` scheduled by the custom schedule registered for its workload
// key, else for its description (op name or fused kernel); null when neither has one. `key`
// receives the key it was registered under.
std::unique_ptr<Schedule> apply_custom_schedule(const std::vector<tensor_ir::Tensor>& outputs,
                                                const std::string& workload, const std::string& description,
                                                std::string* key = nullptr);

}  // namespace tessera::schedule
