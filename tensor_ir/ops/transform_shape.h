// Static shape arithmetic of the transform operators (reshape, slice, pad, gather, ...), on
// plain integer shapes (squeeze and expand_dims: on dimensions that may be symbolic). The compute definitions
// and the graph ops' type relations share it, so an op validates its arguments and computes its output shape one way
// only. Every function throws tessera::Error naming the offending argument.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor_ir/expr.h"

namespace tessera::tensor_ir::ops {

using Shape = std::vector<int64_t>;

// axis in [-rank, rank) as [0, rank).
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what = "axis");
// Every axis normalized; duplicates are an error.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const std::string& what = "axes");
int64_t numel(const Shape& shape);

Shape reshape_shape(const Shape& in, const Shape& out);  // checks the element counts agree
// An empty `perm` reverses the axes.
std::vector<int64_t> transpose_perm(const std::vector<int64_t>& perm, int64_t rank);
Shape transpose_shape(const Shape& in, const std::vector<int64_t>& perm);
Shape concat_shape(const std::vector<Shape>& ins, int64_t axis);
// Dimensions that may be symbolic: every one but `axis` provably equal across the inputs.
std::vector<Expr> concat_dims(const std::vector<std::vector<Expr>>& ins, int64_t axis);
// Dimensions that may be symbolic but along `axis`, which the sizes must add up to.
std::vector<std::vector<Expr>> split_dims(const std::vector<Expr>& in, int64_t axis, const std::vector<int64_t>& sizes);
// Squeeze's dimensions to drop, sorted; empty `axes`: every dimension of size 1 (then none may be
// symbolic: a symbolic one may be 1 or not).
std::vector<int64_t> squeeze_axes(const std::vector<Expr>& in, const std::vector<int64_t>& axes);
std::vector<Expr> squeeze_dims(const std::vector<Expr>& in, const std::vector<int64_t>& axes);
// `axes` index the output (rank in.size() + axes.size()).
std::vector<Expr> expand_dims_dims(const std::vector<Expr>& in, const std::vector<int64_t>& axes);
// `to` must be the numpy broadcast of `in` and `to` (so `in` stretches into it).
void check_broadcast_to(const Shape& in, const Shape& to);
Shape tile_shape(const Shape& in, const std::vector<int64_t>& repeats);
// With dimensions or repeat counts that may be symbolic (a count must not be negative: a symbolic
// one is a size).
std::vector<Expr> tile_dims(const std::vector<Expr>& in, const std::vector<Expr>& repeats);

// One output dimension of a slice: element i reads input index start + i * step.
struct SliceDim {
  int64_t start = 0, step = 1, length = 0;
};
// ONNX Slice: negative starts/ends count from the end; then starts and ends are clamped to
// [0, dim] (positive steps) or [-1, dim - 1] for ends / [0, dim - 1] for starts (negative
// steps). Empty `axes`: 0, 1, ...; empty `steps`: all 1.
std::vector<SliceDim> slice_dims(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);

enum class PadMode { Constant, Reflect, Edge, Wrap };
PadMode parse_pad_mode(const std::string& mode);
// pads: every dimension's begin, then every dimension's end; negative pads crop. Dimensions and
// pads may be symbolic; a symbolic pad must be provably non-negative (a crop the sizes decide is not
// built), and an edge, reflect or wrap padding of a symbolic dimension needs an element of it at run
// time (relay_ir's pad_nonempty).
std::vector<Expr> pad_dims(const std::vector<Expr>& in, const std::vector<Expr>& pads, PadMode mode);
// What wrap padding wraps around: dimension `in` less what negative (constant) pads crop.
Expr wrapped_length(const Expr& in, const Expr& begin, const Expr& end);

// A batch, height and width may be symbolic (space_to_depth's height and width must divide by
// the blocksize: a symbolic one is checked at each call).
std::vector<Expr> depth_to_space_shape(const std::vector<Expr>& in, int64_t blocksize);
std::vector<Expr> space_to_depth_shape(const std::vector<Expr>& in, int64_t blocksize);

// ONNX Gather: data.shape[:axis] + indices.shape + data.shape[axis+1:].
Shape take_shape(const Shape& data, const Shape& indices, int64_t axis);
// GatherElements: the indices' shape, which must not exceed data's in any axis but `axis`.
Shape gather_elements_shape(const Shape& data, const Shape& indices, int64_t axis);
// The same of dimensions that may be symbolic: a symbolic dimension of indices must provably
// equal data's (but along the axis), and a gathered axis of symbolic size must have an element
// at run time (relay_ir's gather_elements_nonempty).
std::vector<Expr> gather_elements_dims(const std::vector<Expr>& data, const std::vector<Expr>& indices, int64_t axis);
// GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:], dimensions that may
// be symbolic: the index tuples' length a constant, the batch dimensions provably equal; an
// indexed dimension of symbolic size must have an element at run time where tuples read it.
std::vector<Expr> gather_nd_dims(const std::vector<Expr>& data, const std::vector<Expr>& indices, int64_t batch_dims);
// ScatterElements: indices and updates alike, not exceeding data but along `axis`.
void check_scatter_elements(const Shape& data, const Shape& indices, const Shape& updates, int64_t axis);
// ScatterND: updates.shape == indices.shape[:-1] + data.shape[indices.shape[-1]:].
void check_scatter_nd(const Shape& data, const Shape& indices, const Shape& updates);

// OneHot: `depth` inserted at `axis` of the indices' shape (axis in [-rank-1, rank]); either may be
// symbolic.
std::vector<Expr> one_hot_dims(const std::vector<Expr>& indices, const Expr& depth, int64_t axis);
// TopK: `k` along `axis`, whose dimension must hold k (a symbolic one is checked at run time: relay_ir's
// topk_nonempty).
std::vector<Expr> topk_dims(const std::vector<Expr>& in, int64_t k, int64_t axis);

}  // namespace tessera::tensor_ir::ops
