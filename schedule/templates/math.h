// CPU schedules of single stages, for any template whose group holds reductions or elementwise
// stages; the math family's templates ("elemwise", "broadcast", "reduce") are built from them.
#pragma once
#include <vector>

#include "schedule/schedule.h"

namespace tessera::schedule {

// Schedules the reduction stage computing `t` (a root stage whose body is a Reduce):
// - the input's innermost axis is kept: vectors run along it, accumulators stay in registers
//   across the reduction loops, outer loops run in parallel;
// - the innermost axis is reduced: the reduction loops run innermost (trailing ones fused when
//   contiguous) for LLVM to vectorize with reassociation; kept loops run in parallel, or, when
//   there are too few of them, the reduction is split into parallel partial sums (rfactor).
void schedule_reduction_stage(Schedule& s, const Tensor& t);

// Schedules an elementwise or broadcasting root stage (math_elementwise.cc): the trailing axes
// every input reads contiguously or not at all are fused and vectorized, the rest fused and run
// in parallel; an uneven vector split peels one tail per outer iteration.
void schedule_elementwise_stage(Schedule& s, const Tensor& t);

// Vectorizes the innermost loop of `st` where it is a reduction loop (the step combining partial
// results after rfactor): its lanes combine as a tree instead of a chain (Stage::vectorize).
void vectorize_combining_loop(Stage& st);

// The memory reads of `e` once the stages inlined in `s` are expanded: loads (ProducerLoad) of
// inputs and of stages with buffers of their own, indexed in e's variables.
std::vector<Expr> leaf_loads(Schedule& s, const Expr& e);

}  // namespace tessera::schedule
