// Vectorization: a loop marked vectorized with a constant extent becomes straight-line vector
// code; its variable becomes a ramp and loads/stores become vector accesses. A store guarded by a
// condition on the loop variable (the tail of a row of symbolic length) becomes a store of the
// lanes where it holds, its value reading only those. Loops that cannot be vectorized this way
// (a non-constant extent, a branch with two sides or more than a store on the loop variable, an
// allocation inside) run as ordinary loops instead, which is always correct.
// A vectorized loop of a power-of-two extent (up to 64) whose body accumulates into one element
// (`acc = acc + f(i)`, max or min, f not reading acc: the step combining vector partial results
// after rfactor) becomes that element's update by a tree over the lanes, f(min + k) combined with
// f(min + k + extent/2), and so on down to one: a chain of `extent` dependent steps becomes
// log2(extent) deep, in one fixed order (a reassociation of the reduction, as vectorizing it asks
// for).
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt vectorize_loops(const Stmt& s);

}  // namespace tessera::tensor_ir
