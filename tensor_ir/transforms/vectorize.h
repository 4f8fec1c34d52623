// Vectorization: a loop marked vectorized with a constant extent becomes straight-line vector
// code; its variable becomes a ramp and loads/stores become vector accesses. Loops that cannot
// be vectorized this way (a non-constant extent, a branch on the loop variable, an allocation
// inside) run as ordinary loops instead, which is always correct.
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt vectorize_loops(const Stmt& s);

}  // namespace tessera::tensor_ir
