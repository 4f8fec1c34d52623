// Compute definitions of elementwise and broadcasting operators, usable on their own from the
// DSL: tensor_ir::ops::add(A, B) is a compute tensor like any other. Semantics follow numpy
// (and ONNX): broadcasting aligns dimensions from the right, integer division truncates toward
// zero, float min/max propagate NaN, integer division or remainder by zero gives 0.
#pragma once
#include <functional>
#include <string>

#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// --- building blocks ---------------------------------------------------------------------

// Indices into `t` for an element of a broadcast result indexed by `out` (t's dimensions align
// with the last ones of `out`; size-1 dimensions read index 0).
std::vector<Expr> broadcast_indices(const Tensor& t, const std::vector<Var>& out);
// The broadcast shape of two (or more) tensors; throws naming them if they do not broadcast.
std::vector<Expr> broadcast_shape(const Tensor& a, const Tensor& b);
std::vector<Expr> broadcast_shape(const std::vector<Tensor>& ts);

// out[i] = f(x[i]), tagged "elemwise".
Tensor map(const Tensor& x, const std::function<Expr(Expr)>& f, const std::string& name);
// out[i] = f(a[i], b[i]) with broadcasting, tagged "broadcast".
Tensor map2(const Tensor& a, const Tensor& b, const std::function<Expr(Expr, Expr)>& f, const std::string& name);
// body(v) with v bound to `value` by a Let: a select over v then blends instead of masking the
// loads of its sides, and an expression used several times is computed once.
Expr let(Expr value, const std::function<Expr(Expr)>& body);

// Scalar expressions, reused by activations and reductions.
Expr nan_max(Expr a, Expr b);  // NaN if either is NaN (floats); plain max otherwise
Expr nan_min(Expr a, Expr b);
Expr safe_div(Expr a, Expr b);           // integers: truncating, 0 where b == 0, no trap on MIN / -1
Expr int_pow(Expr base, Expr exponent);  // exact (wrapping) integer power; 0 for negative exponents but of ±1

// --- unary -------------------------------------------------------------------------------
Tensor relu(const Tensor& x);  // NaN stays NaN
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sign(const Tensor& x);
// Float intrinsics: exp, log, sqrt, floor, ceil, round (half to even), erf, sin, cos, tan, asin,
// acos, atan, sinh, cosh, asinh, acosh, atanh, tanh, sigmoid.
Tensor unary_intrinsic(const Tensor& x, Intrinsic op);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x, bool detect_positive = true, bool detect_negative = true);
Tensor logical_not(const Tensor& x);
Tensor bitwise_not(const Tensor& x);
// Converts each element (float -> int truncates toward zero; x -> bool is x != 0; to a narrow
// type as runtime/narrow_types.h says).
Tensor cast(const Tensor& x, DataType dtype);
// Each element's bits read as `dtype`, of the same width (a bool is a byte, 0 or 1; a byte read
// as bool is true when not 0).
Tensor bitcast(const Tensor& x, DataType dtype);

// --- binary, numpy broadcasting, one dtype -----------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
// fmod: C's fmod / % (sign of the dividend); otherwise Python's % (sign of the divisor).
Tensor mod(const Tensor& a, const Tensor& b, bool fmod);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Comparisons return bool.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
// Shifts of unsigned integers; a shift by the bit width or more gives 0.
Tensor left_shift(const Tensor& a, const Tensor& b);
Tensor right_shift(const Tensor& a, const Tensor& b);
// condition ? x : y, broadcasting all three.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);

}  // namespace tessera::tensor_ir::ops
