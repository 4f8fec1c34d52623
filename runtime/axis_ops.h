// ONNX's reductions (ReduceSum ... ReduceLogSumExp) and running sums and products (CumSum,
// CumProd) along axes the data gives (an axes input computed or given at run time), run on the
// host by a program step: a compiled kernel takes its axes as constants, and a module cannot
// compile one for each value met. Results are the compiled operators' (tensor_ir/ops/math_reduce.h,
// cumsum): integers sum, multiply and compare exactly in int64 (wrapping as the type does), the
// rest accumulates in double and is rounded once to the element type. Bad axes throw naming the
// operator.
#pragma once
#include <string>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// reduce_<kind>(x) over `axes` (a 1-D integer array; none or empty: every axis, or x itself with
// noop_with_empty_axes), kind one of sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp,
// sum_square. An empty reduction gives sum's 0, prod's 1, max's lowest and min's highest value,
// mean's NaN (0 for integers).
NDArray reduce_along(const NDArray& x, const NDArray* axes, bool keepdims, bool noop_with_empty_axes,
                     const std::string& kind);

// CumSum (or CumProd, `product`) of x along the one axis `axis` holds: each element the sum of
// those before it along the axis (`exclusive`: not itself; `reverse`: those after it).
NDArray running_along(const NDArray& x, const NDArray& axis, bool exclusive, bool reverse, bool product);

}  // namespace tessera::runtime
