// Turns a schedule and its inferred bounds into one loop nest: each stage's leaf loops around
// its store (a reduction as an init nest plus an update nest), stages computed at a loop placed
// at the start of that loop's body inside a Realize of the region they produce.
#pragma once
#include "schedule/bound_inference.h"
#include "tensor_ir/stmt.h"

namespace tessera::schedule {

tensor_ir::Stmt schedule_ops(const Schedule& schedule, const LoweringPlan& plan);

}  // namespace tessera::schedule
