// Turning a tuning record back into a schedule: its trace replayed on a fresh schedule of the
// kernel's compute definition.
#pragma once
#include <memory>
#include <vector>

#include "autotune/database.h"
#include "schedule/schedule.h"

namespace tessera::autotune {

// Throws tessera::Error (naming the instruction) if the trace does not replay on `outputs`.
std::unique_ptr<schedule::Schedule> schedule_from_record(const Record& record,
                                                         const std::vector<tensor_ir::Tensor>& outputs);

}  // namespace tessera::autotune
