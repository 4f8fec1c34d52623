// Turns a schedule and its inferred bounds into one loop nest: each stage's leaf loops around
// its store (a reduction as an init nest plus an update nest), stages computed at a loop placed
// at the start of that loop's body inside a Realize of the region they produce.
#pragma once
#include "schedule/bound_inference.h"
#include "tensor_ir/stmt.h"

namespace tessera::schedule {

// What a device changes in the nest. A reduction across the threads of a block combines its
// threads' partials by warp shuffles where the device has warps (`warp_size` lanes, a power of
// two) and through shared memory where it has none (1). A stage with no loop at all (a scalar)
// runs on one thread of a launch of its own: there is nothing to bind.
struct DeviceNest {
  int warp_size = 1;
};

// `device`: null for a CPU.
tensor_ir::Stmt schedule_ops(const Schedule& schedule, const LoweringPlan& plan, const DeviceNest* device = nullptr);

}  // namespace tessera::schedule
