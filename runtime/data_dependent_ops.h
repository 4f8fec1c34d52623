// ONNX operators whose output shape depends on the input's values (NonZero, Compress, Unique,
// NonMaxSuppression, TopK of a k the data gives): no compiled kernel can size their results ahead of time, so the
// program executor runs them on the host, on CPU arrays, between compiled stages. Semantics are ONNX's (and its
// reference implementation's, numpy's where ONNX defers to it). Integers and bool compare exactly, floats as doubles;
// values are copied as raw bytes, so none changes on the way through. Bad input (a wrong rank, an axis out of range, an
// array not on the CPU) throws tessera::Error naming the operator.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// NonZero: int64 [rank, count], the coordinates of the nonzero elements of `x` (any element type;
// NaN is nonzero, -0.0 zero) in row-major order, as numpy.nonzero stacks them. A scalar gives
// [0, count] (0 or 1 columns of no coordinates), as ONNX says, where numpy would say [1, count].
NDArray nonzero(const NDArray& x);

// Compress: the slices of `x` along `axis` (negative counts from the back) whose entry in the 1-D
// `condition` is true (bool, or any numeric type where nonzero is true); with no axis, the
// elements of `x` flattened. A condition shorter than the axis drops the slices past its end; a
// longer one may only have false entries past it (numpy.compress).
NDArray compress(const NDArray& x, const NDArray& condition, std::optional<int64_t> axis);

// Unique: {Y, indices, inverse_indices, counts}, the last three int64 and 1-D. With no axis, the
// distinct elements of `x` flattened; with one, its distinct slices along `axis` (Y has x's shape
// but for that dimension). `sorted` orders them ascending (slices lexicographically, in row-major
// order of their elements), else by first occurrence. `indices` gives each one's first occurrence
// in x, `inverse_indices` each element's (or slice's) place in Y, `counts` how often each occurs.
// As numpy.unique: NaN sorts last; flattened, all NaNs are one value; a slice holding a NaN equals
// no other slice; 0.0 and -0.0 are one value, Y keeping the bytes of its first occurrence.
std::vector<NDArray> unique(const NDArray& x, std::optional<int64_t> axis, bool sorted);

// TopK: {values, int64 indices}, the k largest (or smallest) entries of `x` along `axis` (negative
// counts from the back), sorted, equal ones the lower index first; a NaN ranks after every number
// either way. Throws naming a k outside [0, the axis' length].
std::vector<NDArray> topk(const NDArray& x, int64_t k, int64_t axis, bool largest);

// Range: the 1-D array start, start + delta, ... up to limit (excluded), of the scalars' one
// element type; max(ceil((limit - start) / delta), 0) elements. Integers exactly (int64 beyond
// 2^53 too, each element truncated to the type as ONNX's int arithmetic wraps), floats in double
// rounded once. Throws naming a delta of 0, mixed types, a non-scalar, or over 10^9 elements.
NDArray range(const NDArray& start, const NDArray& limit, const NDArray& delta);

// Resize's output shape, int64 [rank], from scales the data gives: along each axis of `axes` (every
// axis, in order, where empty) floor(size * scale), in double as ONNX's reference computes it; the
// other axes keep their size. Throws naming a count of scales other than the axes', or a scale
// that is not a positive finite number.
NDArray resized_shape(const std::vector<int64_t>& shape, const NDArray& scales, std::vector<int64_t> axes);

// NonMaxSuppression: int64 [k, 3] rows (batch, class, box) of the boxes kept, by batch, then class,
// then score descending (ties: the lower box index first). `boxes` is float32 [B, S, 4], as
// [y1, x1, y2, x2] (any two opposite corners) or, with `center_point_box`, [x_center, y_center,
// width, height]; `scores` is float32 [B, C, S]. A box is kept unless its IOU with a box already
// kept for its class is greater than `iou_threshold`, at most `max_output_boxes_per_class` per
// class (none when it is 0 or less); with a score threshold, only boxes scoring above it compete.
// A NaN score ranks below every number. Arithmetic is in float32, as in ONNX Runtime (and in the
// reference implementation under numpy 2), so IOUs at the threshold decide the same.
NDArray non_max_suppression(const NDArray& boxes, const NDArray& scores, int64_t max_output_boxes_per_class,
                            float iou_threshold, std::optional<float> score_threshold, bool center_point_box);

}  // namespace tessera::runtime
