// The arithmetic simplifier: constant folding, canonical linear forms for integer arithmetic,
// div/mod and min/max/comparison rules decided by constant bounds, vector (ramp/broadcast)
// algebra, and, on statements, removal of dead branches and trivial loops. Lowering runs it
// after every step, so every rule here keeps generated index code short.
#pragma once
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/ir.h"

namespace tessera::tensor_ir::arith {

Expr simplify(const Expr& e, const BoundMap& vars = {});
// Tracks the range of every loop variable while simplifying the loop's body.
Stmt simplify(const Stmt& s, const BoundMap& vars = {});
// True if `condition` simplifies to true under `vars`; false means "not proven".
bool can_prove(const Expr& condition, const BoundMap& vars = {});
// The largest value of `e` (kPosInf if unbounded), seeing through a min whose sides the terms
// around it cancel against: a clipped tile's extent, min(jo*32 + 31, n - 1) + 1 - jo*32, is at
// most 32, which interval arithmetic alone cannot tell.
int64_t upper_bound(const Expr& e, const BoundMap& vars = {});

}  // namespace tessera::tensor_ir::arith
