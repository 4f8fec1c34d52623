// Barriers in device kernels: the threads of a block share its shared buffers, so where one
// thread reads what another wrote, or writes what another may still be reading, the block must
// wait for all its threads in between. The pass finds those places in program order (the order
// every thread runs the kernel in) and puts a barrier() there, and nowhere else.
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

// Within each kernel (a ThreadExtent not inside another), a barrier goes before a statement that
// reads a shared buffer written since the last barrier (read after write) or writes one read
// since then (write after read), and at the start of a loop's body when an iteration does so to
// what the iteration before it accessed (a tile refilled while other threads read the last one).
// Accesses at the same index expression are one thread's own element and never conflict (TVM's
// rule). Barriers go between the statements of a block or loop body, never inside a branch, so
// every thread of the block reaches them: a statement under an `if` counts as a whole. A branch, or
// a loop whose trip count depends on threadIdx, that would need a barrier inside is an error.
Stmt insert_barriers(const Stmt& s);

}  // namespace tessera::tensor_ir
