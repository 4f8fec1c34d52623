// Index helpers shared by the operator library's compute definitions.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor_ir/expr.h"
#include "tensor_ir/op.h"

namespace tessera::tensor_ir::ops {

// A static shape as index expressions.
inline std::vector<Expr> shape_exprs(const std::vector<int64_t>& shape) {
  return std::vector<Expr>(shape.begin(), shape.end());
}
inline std::vector<Expr> shape_exprs(const std::vector<Expr>& shape) { return shape; }
// A compute's index variables as expressions (to modify some and read a tensor with them).
inline std::vector<Expr> as_exprs(const std::vector<Var>& vars) { return std::vector<Expr>(vars.begin(), vars.end()); }
// The row-major position of coordinates `idx` in a shape `dims`.
inline Expr flat_index(const std::vector<Expr>& idx, const std::vector<int64_t>& dims) {
  Expr flat = idx[0];
  for (size_t d = 1; d < idx.size(); ++d) flat = flat * Expr(dims[d]) + idx[d];
  return flat;
}
// The coordinates in a shape `dims` of row-major position `flat`.
inline std::vector<Expr> unflat_index(Expr flat, const std::vector<int64_t>& dims) {
  std::vector<Expr> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = d == 0 ? flat : floormod(flat, Expr(dims[d]));
    flat = floordiv(flat, Expr(dims[d]));
  }
  return idx;
}

}  // namespace tessera::tensor_ir::ops
