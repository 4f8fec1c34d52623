// Symbolic intervals [min, max] of integer expressions when some variables range over
// intervals (possibly symbolic themselves). Bound inference asks: "which elements of the
// producer does the consumer read while its inner loops run and its outer ones stay fixed?"
#pragma once
#include <unordered_map>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir::arith {

// Inclusive bounds; an undefined end is unbounded.
struct Interval {
  Expr min, max;
  static Interval point(const Expr& e) { return {e, e}; }
  static Interval from_range(const Range& r);  // [min, min + extent - 1]
  bool bounded() const { return min.defined() && max.defined(); }
  // The Range [min, max + 1), simplified; fails if unbounded.
  Range to_range() const;
};

using IntervalMap = std::unordered_map<const VarNode*, Interval>;

// Variables not in `dom` stand for themselves. Ends are simplified.
Interval eval_interval(const Expr& e, const IntervalMap& dom);
Interval union_of(const Interval& a, const Interval& b);
Interval intersect(const Interval& a, const Interval& b);

}  // namespace tessera::tensor_ir::arith
