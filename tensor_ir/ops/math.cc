#include "tensor_ir/ops/math.h"

#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/op.h"

namespace tessera::tensor_ir::ops {

std::vector<Expr> broadcast_indices(const Tensor& t, const std::vector<Var>& out) {
  std::vector<Expr> idx;
  size_t offset = out.size() - t.ndim();
  for (size_t d = 0; d < t.ndim(); ++d) idx.push_back(t->dim(d) == 1 ? Expr(0) : Expr(out[offset + d]));
  return idx;
}

std::vector<Expr> broadcast_shape(const Tensor& a, const Tensor& b) {
  size_t n = std::max(a.ndim(), b.ndim());
  std::vector<Expr> shape;
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.ndim() ? 1 : a->dim(i - (n - a.ndim()));
    int64_t y = i < n - b.ndim() ? 1 : b->dim(i - (n - b.ndim()));
    if (x != y && x != 1 && y != 1) fail("broadcast of ", a.name(), " and ", b.name(), ": dimension ", i, " is ", x, " vs ", y);
    shape.push_back(Expr(x == 1 ? y : x));
  }
  return shape;
}

Tensor relu(const Tensor& x) {
  return compute(x->shape, [&](const std::vector<Var>& i) {
    std::vector<Expr> idx(i.begin(), i.end());
    return max(x(idx), make_zero(x.dtype()));
  }, "relu", "elemwise");
}

Tensor add(const Tensor& a, const Tensor& b) {
  return compute(broadcast_shape(a, b), [&](const std::vector<Var>& i) {
    return a(broadcast_indices(a, i)) + b(broadcast_indices(b, i));
  }, "add", "broadcast");
}

}  // namespace tessera::tensor_ir::ops
