// A stage computed inside a thread-bound loop of another (a shared tile filled cooperatively at
// the reduction loop of a GEMM) may bind its own loops to the same thread axes: they run on the
// threads of the enclosing launch, not on new ones. This pass makes each such inner ThreadExtent
// the thread of its enclosing one of the same tag, so a kernel binds each tag once.
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

// An inner ThreadExtent of a tag already bound around it is replaced by its body, reading the
// outer variable, and guarded when it has fewer iterations than the outer one has threads. One
// with more iterations than threads, or whose extent is not a constant, is an error naming its
// variable: its work would not be done.
Stmt merge_thread_extents(const Stmt& s);

}  // namespace tessera::tensor_ir
