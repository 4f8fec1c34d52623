// Signal-processing, recurrent, sampling and linear-algebra operators.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"

namespace tessera::relay_ir {

void register_extra_ops(OpRegistry& r) {}

}  // namespace tessera::relay_ir
