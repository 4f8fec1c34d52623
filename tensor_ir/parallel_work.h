// Parallel loops whose work is known at run time only. A template parallelizes a stage of
// symbolic extents whatever its size hint says (the hint is one size of many); it marks the loop
// with kParallelMinWork, its threshold for a stage of constant sizes, and the loop then runs on
// the thread pool only at the calls whose sizes give it that much work: at a few rows a launch
// costs more than the other threads save.
#pragma once
#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

// The pragma's key; its value is the least work (scalar values stored) worth a parallel launch.
inline constexpr const char* kParallelMinWork = "parallel_min_work";

// The scalar values the loop nest `s` stores, as an int64 expression of the variables bound
// around it: each store's lanes times the extents of the loops around it, summed over stores (a
// branch counts as the larger of its two sides). An extent that depends on a variable bound
// inside `s` counts as its upper bound. Undefined when one has none.
Expr stored_values(const Stmt& s);

// Whether the parallel loop `loop` is worth its launch at run time: `stored_values(loop) >= its
// kParallelMinWork`, simplified. Undefined (always parallel) without the pragma, or when the work
// cannot be counted.
Expr worth_parallel_launch(const For* loop);

}  // namespace tessera::tensor_ir
