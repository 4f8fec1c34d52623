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
// The row-major position of coordinates `idx` in a shape `dims` (constant or symbolic).
inline Expr flat_index(const std::vector<Expr>& idx, const std::vector<Expr>& dims) {
  Expr flat = idx[0];
  for (size_t d = 1; d < idx.size(); ++d) flat = flat * dims[d] + idx[d];
  return flat;
}
inline Expr flat_index(const std::vector<Expr>& idx, const std::vector<int64_t>& dims) {
  return flat_index(idx, shape_exprs(dims));
}
// The coordinates in a shape `dims` of row-major position `flat`.
inline std::vector<Expr> unflat_index(Expr flat, const std::vector<Expr>& dims) {
  std::vector<Expr> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = d == 0 ? flat : floormod(flat, dims[d]);
    flat = floordiv(flat, dims[d]);
  }
  return idx;
}
inline std::vector<Expr> unflat_index(Expr flat, const std::vector<int64_t>& dims) {
  return unflat_index(std::move(flat), shape_exprs(dims));
}

// ceil(n / d), folded when n is constant or d is 1.
inline Expr ceil_div(const Expr& n, int64_t d) {
  if (d == 1) return n;
  const int64_t* v = as_const_int(n);
  return v ? Expr((*v + d - 1) / d) : floordiv(n + Expr(d - 1), Expr(d));
}
// n rounded up to a multiple of d, folded likewise.
inline Expr round_up(const Expr& n, int64_t d) {
  if (d == 1) return n;
  const int64_t* v = as_const_int(n);
  return v ? Expr((*v + d - 1) / d * d) : ceil_div(n, d) * Expr(d);
}

}  // namespace tessera::tensor_ir::ops
