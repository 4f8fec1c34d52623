// Memory planning: intermediates share slots of one arena when their lifetimes do not
// overlap (liveness over the step order), so the peak is far below the sum of all of them. An
// elementwise step writes its output over an input that dies there (in place), and views
// (reshapes) share their base's storage, keeping it alive while they are used.
#pragma once
#include "runtime/graph_plan.h"

namespace tessera::driver {

// Assigns every Intermediate tensor of `plan` an arena slot (TensorInfo::index) and fills
// slot_offsets and arena_bytes.
void plan_memory(runtime::GraphPlan& plan);

}  // namespace tessera::driver
