// Loop partitioning: a loop whose body is guarded by likely(...) conditions (the tails of
// uneven splits, a select's mask of padding, concat's inputs) is split into a main part where
// every guard provably holds, with the guards removed, and a tail that keeps them. The main body
// is then free of branches, so it can be vectorized; simplification afterwards drops tails that
// are empty. A vectorized loop is split only where the point is known before the call (its parts
// would run scalar otherwise; vectorize.cc turns its guarded stores into stores of the lanes that
// hold). `known` bounds free variables (a kernel's symbolic dimensions are never negative).
#pragma once
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt partition_loops(const Stmt& s, const arith::BoundMap& known = {});

}  // namespace tessera::tensor_ir
