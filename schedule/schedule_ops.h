// Turns a schedule and its inferred bounds into one loop nest: each stage's leaf loops around
// its store (a reduction as an init nest plus an update nest), stages computed at a loop placed
// at the start of that loop's body inside a Realize of the region they produce. A reduction
// across the threads of a block combines its threads' partials by warp shuffles where the device
// has warps (`warp_size` lanes, a power of two) and through shared memory where it has none (1).
#pragma once
#include "schedule/bound_inference.h"
#include "tensor_ir/stmt.h"

namespace tessera::schedule {

tensor_ir::Stmt schedule_ops(const Schedule& schedule, const LoweringPlan& plan, int warp_size = 1);

}  // namespace tessera::schedule
