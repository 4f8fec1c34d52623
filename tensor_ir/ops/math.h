// Compute definitions of elementwise and broadcasting operators, usable on their own from the
// DSL: tensor_ir::ops::add(A, B) is a compute tensor like any other.
#pragma once
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

Tensor relu(const Tensor& x);
// numpy broadcasting: dimensions align from the right; size-1 dimensions stretch.
Tensor add(const Tensor& a, const Tensor& b);

// Indices into `t` for an element of a broadcast result indexed by `out` (t's dimensions align
// with the last ones of `out`; size-1 dimensions read index 0).
std::vector<Expr> broadcast_indices(const Tensor& t, const std::vector<Var>& out);
// The broadcast shape of two tensors; throws naming both if they do not broadcast.
std::vector<Expr> broadcast_shape(const Tensor& a, const Tensor& b);

}  // namespace tessera::tensor_ir::ops
