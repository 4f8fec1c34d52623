#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"

namespace tessera::relay_ir {

void register_all_op_families(OpRegistry& r) {
  register_elementwise_ops(r);
}

}  // namespace tessera::relay_ir
