// Shape and data-movement operators.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"

namespace tessera::relay_ir {

void register_transform_ops(OpRegistry& r) {}

}  // namespace tessera::relay_ir
