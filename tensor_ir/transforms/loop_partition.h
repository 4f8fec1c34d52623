// Loop partitioning: a loop whose body is guarded by likely(...) conditions (the tails of
// uneven splits, or a select's mask of padding) is split into a main part where every guard
// provably holds, with the guards removed, and a tail that keeps them. The main body is then free of branches, so it can be
// vectorized; simplification afterwards drops tails that are empty. `known` bounds free variables
// (a kernel's symbolic dimensions are never negative).
#pragma once
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt partition_loops(const Stmt& s, const arith::BoundMap& known = {});

}  // namespace tessera::tensor_ir
