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

// The same for the likely() guards of writes past the end of a tile (C[t*16 + j] where
// t*16 + j < L), before loop partitioning: it splits a loop in two where a guard is linear in
// its variable, but a tile index fused with others (t = f % T) leaves it splitting each inner
// loop at a point only known at run time, which the vectorizer cannot take: there every tile's
// writes became scalar. So the guards nonlinear in the outermost loop's variable are unswitched:
// if (every guard holds across the tile) { the body unguarded } else { the body }. In a kernel of
// static sizes (`known` empty) only the guards inside a vectorized loop, where the tiles' writes
// would be scalar: the copy of every guarded body lengthened the compilation of the
// rule-generated sketches tuning measures.
Stmt unswitch_tile_guards(const Stmt& s, const arith::BoundMap& known = {});

}  // namespace tessera::tensor_ir
