// Bound inference: for every stage, the range of each of its loops. An output or root stage
// covers its whole domain; a stage computed at a loop of another covers just the region its
// consumers read while that loop's iteration runs (outer loops fixed, inner loops ranging),
// clipped to its domain. Inside loops bound to threads, that region also covers the threads that
// share the stage's buffer (its scope: shared, a block's threads; global, every block). Splits
// that do not divide get a `likely` guard.
#pragma once
#include <unordered_map>
#include <vector>

#include "schedule/schedule.h"
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/substitute.h"

namespace tessera::schedule {

// A prefetch of the stage (Stage::prefetch): the region of `tensor` the iteration `offset` steps
// further along `from` reads (per dimension its first index, in terms of the loops around
// `from`, and its constant extent); its cache lines are fetched in `parts` equal shares, share
// `part` at the start of each iteration of `at` (`parts` is symbolic where `from` steps over
// loops of symbolic extent).
struct PrefetchRegion {
  Loop at;
  Tensor tensor;
  std::vector<Expr> min;
  std::vector<int64_t> extent;
  Expr part;
  Expr parts;
};

struct StagePlan {
  Stage* stage = nullptr;
  // The memory its buffer lives in: its stage's scope, or the one chosen by where it is computed.
  std::string scope;
  // The definition with inlined producers substituted in.
  Expr body;
  // Per dimension of the output: region computed (min, extent) and the buffer extent that holds
  // it in any iteration of the enclosing loops (a constant, or the tensor's symbolic dimension).
  std::vector<tensor_ir::Range> region;
  std::vector<Expr> buffer_extent;
  // Extent of every loop of the stage (root, intermediate and leaf); leaves run from 0.
  std::unordered_map<const LoopNode*, Expr> extent;
  // Each root loop variable as an expression of the leaf loops (and enclosing ones).
  tensor_ir::VarMap root_value;
  // Guards of uneven splits, each likely(...), in terms of leaf variables.
  std::vector<Expr> predicates;
  // Loops around the stage's computation, outermost first: the enclosing stages' loops down to
  // the attach point, then the stage's own leaves.
  std::vector<std::pair<Var, Expr>> context;
  std::vector<PrefetchRegion> prefetches;
};

struct LoweringPlan {
  std::vector<StagePlan> stages;  // computed stages only (no placeholders, no inlined ones)
  std::unordered_map<const Stage*, size_t> index;
  tensor_ir::arith::BoundMap var_bounds;  // constant ranges of every loop variable

  const StagePlan& of(const Stage* s) const { return stages.at(index.at(s)); }
};

LoweringPlan infer_bounds(Schedule& schedule);

}  // namespace tessera::schedule
