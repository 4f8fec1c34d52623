// A shared buffer belongs to its block for the whole kernel: OpenCL C declares __local arrays
// only at kernel scope, and CUDA's __shared__ arrays live as long as the block. Lowering leaves a
// shared stage's allocation where the stage is computed (inside the loop it is attached at); this
// pass moves each kernel's shared allocations to its top, just inside its leading ThreadExtents.
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt hoist_shared_allocations(const Stmt& s);

}  // namespace tessera::tensor_ir
