// Reads clamped to a tensor's end (A[min(r*8 + i, M - 1)]: the rows of a tile past the end of a
// product padded to whole tiles) clamp in every tile, though only the last tile reaches the end:
// each row then costs a min and is addressed on its own instead of at a constant offset from the
// tile's first row. In the body of each outermost loop, a clamp min(x, y) in a load's index whose
// x stays at most y over the loops inside once a condition on the loops outside holds is
// unswitched: if (condition) { the body, those loads unclamped } else { the body }.
#pragma once
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

// `known` bounds free variables (a kernel's symbolic dimensions are never negative).
Stmt unswitch_clamps(const Stmt& s, const arith::BoundMap& known = {});

}  // namespace tessera::tensor_ir
