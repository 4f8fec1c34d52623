// Index helpers shared by the operator library's compute definitions.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor_ir/expr.h"

namespace tessera::tensor_ir::ops {

// A static shape as index expressions.
inline std::vector<Expr> shape_exprs(const std::vector<int64_t>& shape) { return std::vector<Expr>(shape.begin(), shape.end()); }
// A compute's index variables as expressions (to modify some and read a tensor with them).
inline std::vector<Expr> as_exprs(const std::vector<Var>& vars) { return std::vector<Expr>(vars.begin(), vars.end()); }

}  // namespace tessera::tensor_ir::ops
