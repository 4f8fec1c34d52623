// Building blocks of gradient builders: constants shaped like a value, and the sum that undoes
// a broadcast (the gradient of a broadcast operand is summed over the axes it was stretched
// along, back to its own shape).
#pragma once
#include "relay_ir/expr.h"

namespace tessera::relay_ir {

// A constant of `type` (a tensor type) filled with `value`.
Expr filled_like(const Type& type, double value);
Expr zeros_like(const Type& type);
Expr ones_like(const Type& type);
// A 0-d constant of `dtype`, which broadcasts against anything.
Expr scalar_of(double value, DataType dtype);
// `grad` (shaped like the broadcast result) summed back to `target`'s shape.
Expr collapse_sum_to(const Expr& grad, const Type& target);
// Shorthands for calls of the arithmetic graph ops.
Expr add(const Expr& a, const Expr& b);
Expr sub(const Expr& a, const Expr& b);
Expr mul(const Expr& a, const Expr& b);
Expr div(const Expr& a, const Expr& b);
Expr neg(const Expr& a);

}  // namespace tessera::relay_ir
