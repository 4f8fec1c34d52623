// Templates choose tiles, unrolling and thresholds from loop extents. A symbolic extent (a batch
// or sequence length that a kernel takes at run time) counts as its size hint for those choices
// (tensor_ir/size_hint.h: tile_size_hint): the splits they lead to get their tails from lowering, which also keeps
// a vectorized or unrolled loop of unknown extent serial, so every size computes correctly.
#pragma once
#include <cstdint>

#include "schedule/schedule.h"
#include "tensor_ir/op.h"
#include "tensor_ir/size_hint.h"
#include "tensor_ir/tensor.h"

namespace tessera::schedule {

inline int64_t extent_hint(const tensor_ir::Expr& extent) { return tensor_ir::tile_size_hint(extent); }
inline int64_t dim_hint(const tensor_ir::OperationNode* t, size_t d) { return extent_hint(t->shape.at(d)); }
inline int64_t dim_hint(const tensor_ir::Tensor& t, size_t d) { return dim_hint(t.get(), d); }
// Whether two extents are the same (equal constants, or the same expression): where a template
// relies on equal shapes, a hint will not do.
bool same_extent(const tensor_ir::Expr& a, const tensor_ir::Expr& b);
// Whether `t`'s loops (its dimensions and, for a compute, its reductions) have a symbolic extent.
bool has_symbolic_extent(const tensor_ir::Tensor& t);
// Whether a stage of `t` doing `work` (counted at the size hints) is worth a parallel loop: the
// work reaches `threshold`, or it grows with a size known at run time only. A hint is one size of
// many, and the costs are uneven: a parallel loop costs microseconds at small sizes, a serial one
// the other threads' share of the time at large ones, where the time goes.
inline bool worth_parallel(const tensor_ir::Tensor& t, int64_t work, int64_t threshold) {
  return work >= threshold || has_symbolic_extent(t);
}
// Makes `loop` of the stage of `t` parallel; for a stage of symbolic extents, only at the calls
// whose work reaches `threshold` (tensor_ir/parallel_work.h), which the call's sizes decide.
void parallel_above(Stage& st, const Loop& loop, const tensor_ir::Tensor& t, int64_t threshold);
// parallel_above where worth_parallel says so.
inline void parallel_if_worth(Stage& st, const Loop& loop, const tensor_ir::Tensor& t, int64_t work,
                              int64_t threshold) {
  if (worth_parallel(t, work, threshold)) parallel_above(st, loop, t, threshold);
}
inline bool same_shape(const tensor_ir::Tensor& a, const tensor_ir::Tensor& b) {
  if (a.ndim() != b.ndim()) return false;
  for (size_t d = 0; d < a.ndim(); ++d)
    if (!same_extent(a->shape[d], b->shape[d])) return false;
  return true;
}

}  // namespace tessera::schedule
