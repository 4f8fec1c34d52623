// Constant lower and upper bounds of integer expressions, given bounds of their variables.
// The simplifier uses them to decide comparisons, min/max and div/mod (x // 8 is 0 when x is
// known to lie in [0, 7]); bound inference uses them to size buffers.
#pragma once
#include <cstdint>
#include <limits>
#include <unordered_map>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir::arith {

struct ConstBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static ConstBound point(int64_t v) { return {v, v}; }
  static ConstBound everything() { return {}; }
  bool is_point() const { return min == max; }
  bool bounded() const { return min != kNegInf && max != kPosInf; }
  bool contains(int64_t v) const { return min <= v && v <= max; }
};

using BoundMap = std::unordered_map<const VarNode*, ConstBound>;

// Bounds of `e` (integer or bool); variables missing from `vars` range over their whole type.
ConstBound const_bound(const Expr& e, const BoundMap& vars);

}  // namespace tessera::tensor_ir::arith
