#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"

namespace tessera::relay_ir {

void register_all_op_families(OpRegistry& r) {
  register_math_ops(r);
  register_nn_ops(r);
  register_transform_ops(r);
  register_extra_ops(r);
}

}  // namespace tessera::relay_ir
