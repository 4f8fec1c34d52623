// Compute definitions of the operators that gradients of data movement need and no forward op
// provides: the transposes of slice (unslice), of take (take_grad) and of a sparse weighted
// gather along one axis (weighted_gather, the building block of resize's gradient). Like the
// scatters of transform_index.h they are written as gathers: each output element sums what is
// aimed at it, so they stay pure, parallel computes.
#pragma once
#include <vector>

#include "tensor_ir/ops/transform_shape.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// Zeros of `shape` holding x where slice(starts, ends, axes, steps) of that shape reads: the
// transpose of slice. x must have the slice's output shape.
Tensor unslice(const Tensor& x, const Shape& shape, const std::vector<int64_t>& starts,
               const std::vector<int64_t>& ends, const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
// Shape of take_grad: x's shape with the indices' axes (from `axis` on) replaced by `size`.
Shape take_grad_shape(const Shape& x, const Shape& indices, int64_t axis, int64_t size);
// The transpose of take(data, indices, axis) for a data axis of length `size`: x (shaped like
// take's result) summed into zeros at the indices (wrapped and clamped as take reads them), so
// repeated indices accumulate.
Tensor take_grad(const Tensor& x, const Tensor& indices, int64_t axis, int64_t size);
// out[.., i, ..] = sum over k of weight[i, k] * x[.., index[i, k], ..] along `axis`: index and
// weight are [n, K] tables (index wrapped and clamped into the axis), out has n along `axis`.
Tensor weighted_gather(const Tensor& x, const Tensor& index, const Tensor& weight, int64_t axis);

}  // namespace tessera::tensor_ir::ops
