#include "tensor_ir/dimension_must_equal.h"

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

void require_constant_dim(const Expr& dim, int64_t value, const std::string& message) {
  if (const auto* v = dim.as<VarNode>()) throw DimensionMustEqual(v->name, value, message);
}

}  // namespace tessera::tensor_ir
