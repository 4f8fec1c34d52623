// Building blocks of gradient builders (the GradientFn each op registers with its compute):
// reading the call being differentiated, constants shaped like a value, the sum that undoes a
// broadcast (a broadcast operand's cotangent is summed over the axes it was stretched along,
// back to its own shape), and shorthands for the graph ops gradients are made of.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "relay_ir/op.h"

namespace tessera::relay_ir {

// The call a gradient builder differentiates, and its argument `i`.
const CallNode& as_call(const Expr& call);
const Expr& arg(const Expr& call, size_t i);
// The tensor type of a value: its checked type, or, for a value the gradient pass or another
// gradient has just built (not typed yet), the type inferred then.
const TensorTypeNode& tensor_of(const Expr& e);

// A constant of `type` (a tensor type) filled with `value`.
Expr filled_like(const Type& type, double value);
Expr zeros_like(const Type& type);
Expr ones_like(const Type& type);
// A 0-d constant of `dtype`, which broadcasts against anything.
Expr scalar_of(double value, DataType dtype);
// The same of `like`'s dtype.
Expr scalar_like(double value, const Expr& like);
// `grad` (shaped like the broadcast result) summed back to `target`'s shape.
Expr collapse_sum_to(const Expr& grad, const Type& target);

// Shorthands for calls of graph ops.
Expr add(const Expr& a, const Expr& b);
Expr sub(const Expr& a, const Expr& b);
Expr mul(const Expr& a, const Expr& b);
Expr div(const Expr& a, const Expr& b);
Expr neg(const Expr& a);
Expr compare(const char* op, const Expr& a, const Expr& b);  // equal, less, greater, ...
// condition ? a : b (the graph op `where`, broadcasting all three).
Expr select(const Expr& condition, const Expr& a, const Expr& b);
// A bool tensor as 0/1 of `like`'s dtype.
Expr as_mask(const Expr& condition, const Expr& like);

// The gradient of an elementwise function: g * f'(x), with f'(x) given from x, the result y and
// the call's attributes.
using Derivative = std::function<Expr(const Expr& x, const Expr& y, const Attrs& attrs)>;
GradientFn elementwise_gradient(Derivative derivative);
// The gradient of a broadcasting binary op a op b: the rule gives both cotangents before the
// broadcast is undone (an undefined Expr for an operand that has none).
using BinaryRule = std::function<std::pair<Expr, Expr>(const Expr& a, const Expr& b, const Expr& out, const Expr& g)>;
GradientFn broadcast_gradient(BinaryRule rule);

}  // namespace tessera::relay_ir
