// The last clean-up before code generation: likely() markers are dropped (they have served
// loop partitioning) and loops marked unrolled whose extent is not a constant run serially.
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt legalize_for_codegen(const Stmt& s);

}  // namespace tessera::tensor_ir
