// Matrix, convolution, pooling, normalization, softmax and loss operators.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"

namespace tessera::relay_ir {

void register_nn_ops(OpRegistry& r) {}

}  // namespace tessera::relay_ir
