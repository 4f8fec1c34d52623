// Compute definitions of the operators that read or write at indices held in a tensor: take
// (ONNX Gather), gather_elements, gather_nd, scatter_elements, scatter_nd. Negative indices
// count from the end; indices still out of range after that are clamped to the valid range, so
// a kernel never touches memory outside its buffers whatever the index values (ONNX leaves
// such results undefined).
#pragma once
#include <string>

#include "tensor_ir/ops/transform_shape.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// An index value read from a tensor (any integer type) as an int64 in [0, n): negative ones
// wrap once, the rest is clamped.
Expr wrap_and_clamp_index(const Expr& index, int64_t n);
// The same for an axis of size n that may be symbolic, which must then be at least 1.
Expr wrap_and_clamp_index(const Expr& index, const Expr& n);

Tensor take(const Tensor& data, const Tensor& indices, int64_t axis);
Tensor gather_elements(const Tensor& data, const Tensor& indices, int64_t axis);
Tensor gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims);

// How scattered values combine with the data: replace (the last of duplicate indices wins),
// add, multiply, or keep the largest or smallest (every duplicate counts).
enum class ScatterReduction { None, Add, Mul, Max, Min };
ScatterReduction parse_scatter_reduction(const std::string& name);

// The scatters are written as gathers (each output element looks for the updates aimed at
// it), which keeps them pure computes that parallelize without write conflicts.
Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        ScatterReduction reduction);
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, ScatterReduction reduction);

}  // namespace tessera::tensor_ir::ops
