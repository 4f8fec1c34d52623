// Shared pieces of the math family's gradients (relay_ir/ops/math_grad*.cc): reading a call,
// scalar constants of a value's dtype, and the two common shapes of a gradient builder
// (unary: g times a derivative; binary: two cotangents summed back over broadcasting).
#pragma once
#include <functional>
#include <utility>

#include "relay_ir/op.h"
#include "relay_ir/ops/grad_util.h"

namespace tessera::relay_ir::math_grad {

void register_unary(OpRegistry& r);    // math_grad_unary.cc: elementwise functions and activations
void register_binary(OpRegistry& r);   // math_grad_binary.cc: pow, maximum, minimum, mod, where, cast, prelu
void register_reduce(OpRegistry& r);   // math_grad_reduce.cc: reductions and cumsum

const CallNode& as_call(const Expr& e);
const Expr& arg(const Expr& call, size_t i);
// The dtype and shape of a value, typing it first if it is new.
DataType dtype_of(const Expr& e);
const std::vector<int64_t>& shape_of(const Expr& e);
// A 0-d constant of `like`'s dtype.
Expr scalar_like(double value, const Expr& like);
// condition ? a : b (the graph op `where`, broadcasting all three).
Expr select(const Expr& condition, const Expr& a, const Expr& b);
// A bool tensor as 0/1 of `like`'s dtype.
Expr as_mask(const Expr& condition, const Expr& like);
Expr compare(const char* op, const Expr& a, const Expr& b);  // equal, less, greater, ...

// d f(x) = g * f'(x), with f'(x) given from x, the result y and the call's attributes.
using Derivative = std::function<Expr(const Expr& x, const Expr& y, const Attrs& attrs)>;
GradientFn unary(Derivative derivative);

// d(a op b): the cotangents of both operands before the broadcast is undone (an undefined Expr
// for an operand that has none).
using BinaryRule = std::function<std::pair<Expr, Expr>(const Expr& a, const Expr& b, const Expr& out, const Expr& g)>;
GradientFn binary(BinaryRule rule);

}  // namespace tessera::relay_ir::math_grad
