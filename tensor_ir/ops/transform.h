// Compute definitions of the shape and data-movement operators (reshape, transpose, concat,
// slice, pad, ...), usable on their own from the DSL. Each output element reads a few input
// elements; the computes are tagged "transform" (rows: vectorized innermost axis, parallel
// outer axes) or "transpose" (square tiles), the templates of schedule/templates/transform.cc.
// Shapes are checked by transform_shape.h.
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/ops/transform_shape.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// `shape` is the full output shape (same element count, row-major order kept).
Tensor reshape(const Tensor& x, const Shape& shape);
// The same for symbolic shapes: `shape`'s element count must equal x's (the caller checks it).
Tensor reshape(const Tensor& x, const std::vector<Expr>& shape);
// out.shape[i] = x.shape[perm[i]]; an empty perm reverses the axes.
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes);
// Removes size-1 dimensions `axes` (all of them when empty).
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes);
// Inserts size-1 dimensions at `axes` of the output (ONNX Unsqueeze).
Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& axes);
// numpy broadcasting of x to `shape`.
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// The same for symbolic shapes: each of x's dimensions is 1 or structurally `shape`'s.
Tensor broadcast_to(const Tensor& x, const std::vector<Expr>& shape);
// start + i * delta for i below `length` (ONNX Range of a length of symbolic size); start and
// delta are scalars of the output's dtype.
Tensor arange(const Tensor& start, const Tensor& delta, const Expr& length);
// The values of `dims` (expressions of the sizes) as a tensor of `dtype`: a scalar of the one
// element, or a vector.
Tensor shape_values(const std::vector<Expr>& dims, runtime::DataType dtype, bool scalar);
Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats);
// Dimensions or repeat counts that may be symbolic.
Tensor tile(const Tensor& x, const std::vector<Expr>& repeats);
// One output dimension of a slice of dimensions that may be symbolic: element i reads input index
// start + i * step. A symbolic axis sliced by constant starts and ends (a crop, every other row)
// takes ONNX's clamping as min and max expressions of its size; a start or end beyond 2^31 (as
// exporters write INT64_MAX) stands for the axis' end.
struct SliceAxis {
  Expr start;
  int64_t step = 1;
  Expr length;
  // Expressions that must be at least 1 at each call: a start or end of symbolic value taken to lie
  // within the axis (its size minus it, plus 1), where the sizes do not tell it.
  std::vector<Expr> within;
};
std::vector<SliceAxis> slice_axes(const std::vector<Expr>& in, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                  const std::vector<int64_t>& steps);
// Starts and ends that may be expressions of the sizes (a crop to another tensor's size, a causal
// mask cut to the sequence's length), each provably non-negative or negative (from the end) at
// every size, sliced by a positive step. Where the sizes do not tell that such a value lies within
// the axis (ONNX would clamp it), the slice takes it as it is and SliceAxis::within checks it.
std::vector<SliceAxis> slice_axes(const std::vector<Expr>& in, const std::vector<Expr>& starts,
                                  const std::vector<Expr>& ends, const std::vector<int64_t>& axes,
                                  const std::vector<int64_t>& steps);
// ONNX Slice semantics (see slice_dims).
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
Tensor slice(const Tensor& x, const std::vector<Expr>& starts, const std::vector<Expr>& ends,
             const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
// pads: begins of every dimension, then ends; `value` fills constant padding.
Tensor pad(const Tensor& x, const std::vector<Expr>& pads, PadMode mode, double value);
// The same with the value one element of `value`, read as the kernel runs.
Tensor pad(const Tensor& x, const std::vector<Expr>& pads, PadMode mode, const Tensor& value);
// DCR (depth-column-row) or CRD ordering of the channels, as ONNX DepthToSpace's `mode`.
Tensor depth_to_space(const Tensor& x, int64_t blocksize, bool crd);
Tensor space_to_depth(const Tensor& x, int64_t blocksize);
// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, zeros the rest.
Tensor trilu(const Tensor& x, bool upper, const Expr& k);  // k may be symbolic
Tensor trilu(const Tensor& x, bool upper, const Tensor& k);  // k: one integer, read as the kernel runs
// out has `depth` inserted at `axis`: values[1] where the (wrapped) index equals the position,
// values[0] elsewhere. Indices outside [-depth, depth) select no position.
Tensor one_hot(const Tensor& indices, const Tensor& values, const Expr& depth, int64_t axis);
// Reverses the first lengths[b] elements along time_axis of every batch entry b.
Tensor reverse_sequence(const Tensor& x, const Tensor& lengths, int64_t batch_axis, int64_t time_axis);

}  // namespace tessera::tensor_ir::ops
