// Compute definitions of reductions, arg-reductions and cumulative sums. `axes` are
// normalized (0 <= axis < ndim, sorted, unique) by reduce_axes(); empty means every axis. The
// reducing stage is tagged "reduce" (schedule/templates/math.cc schedules it); an epilogue
// (mean's division, L2's square root, ...) is a second, elementwise stage.
// float16 data accumulates in float32; integers accumulate in their own type.
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// Axes of an ndim-dimensional tensor, negative ones counted from the end, sorted and checked
// (in range, no repeats); empty stays empty (all axes).
std::vector<int64_t> reduce_axes(const std::vector<int64_t>& axes, size_t ndim, const std::string& op);
// The output shape of reducing `shape` over normalized `axes`.
std::vector<int64_t> reduce_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes, bool keepdims);
std::vector<Expr> reduce_shape(const std::vector<Expr>& shape, const std::vector<int64_t>& axes, bool keepdims);

// combiner over `axes` of f(x) (f maps an element, already in the accumulation type).
Tensor reduce(const Tensor& x, ReduceKind kind, const std::vector<int64_t>& axes, bool keepdims,
              const std::string& name = "reduce");
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_prod(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_l1(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_l2(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_sum_square(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_log_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);
Tensor reduce_log_sum_exp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims);

// The int64 index of the largest (smallest) element along `axis`: the first one, or the last
// with select_last_index.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims, bool select_last_index);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims, bool select_last_index);

// Running sum along `axis`; exclusive leaves the current element out, reverse runs from the end.
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse);
// The running product, likewise (CumProd, opset 26).
Tensor cumprod(const Tensor& x, int64_t axis, bool exclusive, bool reverse);

}  // namespace tessera::tensor_ir::ops
