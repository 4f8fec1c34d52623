// Gradients of elementwise functions and activations. Derivatives reuse the op's result where
// it holds what they need (tan: 1 + y^2, elu: y + alpha); at kinks they follow PyTorch (the
// one-sided derivative PyTorch picks, a zero subgradient for abs and clip's bounds).
#include <cmath>

#include "relay_ir/ops/math_grad.h"

namespace tessera::relay_ir::math_grad {

namespace {

using E = const Expr&;
using A = const Attrs&;

Expr one(E like) { return scalar_like(1, like); }
Expr square(E x) { return mul(x, x); }
Expr unary_call(const char* op, E x) { return call(op, {x}); }
// 1 / sqrt(v)
Expr rsqrt(E v) { return div(one(v), unary_call("sqrt", v)); }
Expr positive(E x) { return compare("greater", x, scalar_like(0, x)); }

}  // namespace

void register_unary(OpRegistry& r) {
  r.set_gradient("abs", unary([](E x, E, A) { return unary_call("sign", x); }));
  r.set_gradient("reciprocal", unary([](E, E y, A) { return neg(square(y)); }));
  r.set_gradient("sin", unary([](E x, E, A) { return unary_call("cos", x); }));
  r.set_gradient("cos", unary([](E x, E, A) { return neg(unary_call("sin", x)); }));
  r.set_gradient("tan", unary([](E, E y, A) { return add(one(y), square(y)); }));
  r.set_gradient("asin", unary([](E x, E, A) { return rsqrt(sub(one(x), square(x))); }));
  r.set_gradient("acos", unary([](E x, E, A) { return neg(rsqrt(sub(one(x), square(x)))); }));
  r.set_gradient("atan", unary([](E x, E, A) { return div(one(x), add(one(x), square(x))); }));
  r.set_gradient("sinh", unary([](E x, E, A) { return unary_call("cosh", x); }));
  r.set_gradient("cosh", unary([](E x, E, A) { return unary_call("sinh", x); }));
  r.set_gradient("asinh", unary([](E x, E, A) { return rsqrt(add(square(x), one(x))); }));
  // (x - 1)(x + 1) rather than x^2 - 1: no cancellation near 1.
  r.set_gradient("acosh", unary([](E x, E, A) { return rsqrt(mul(sub(x, one(x)), add(x, one(x)))); }));
  r.set_gradient("atanh", unary([](E x, E, A) { return div(one(x), sub(one(x), square(x))); }));
  r.set_gradient("erf", unary([](E x, E, A) { return mul(scalar_like(2 / std::sqrt(M_PI), x), unary_call("exp", neg(square(x)))); }));

  r.set_gradient("softplus", unary([](E x, E, A) { return unary_call("sigmoid", x); }));
  r.set_gradient("softsign", unary([](E x, E, A) {
    Expr d = add(one(x), unary_call("abs", x));
    return div(one(x), square(d));
  }));
  // mish = x tanh(softplus(x)): tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
  r.set_gradient("mish", unary([](E x, E, A) {
    Expr t = unary_call("tanh", unary_call("softplus", x));
    return add(t, mul(mul(x, unary_call("sigmoid", x)), sub(one(x), square(t))));
  }));
  r.set_gradient("leaky_relu", unary([](E x, E, A a) { return select(positive(x), one(x), scalar_like(a.get_float("alpha"), x)); }));
  // For x <= 0 the result y is alpha (e^x - 1), so y + alpha is the derivative alpha e^x.
  r.set_gradient("elu", unary([](E x, E y, A a) { return select(positive(x), one(x), add(y, scalar_like(a.get_float("alpha"), x))); }));
  r.set_gradient("selu", unary([](E x, E y, A a) {
    double gamma = a.get_float("gamma"), alpha = a.get_float("alpha");
    return select(positive(x), scalar_like(gamma, x), add(y, scalar_like(gamma * alpha, x)));
  }));
  // For x <= 0, y = alpha (e^(x/alpha) - 1): the derivative e^(x/alpha) is y / alpha + 1.
  r.set_gradient("celu", unary([](E x, E y, A a) {
    return select(positive(x), one(x), add(div(y, scalar_like(a.get_float("alpha"), x)), one(x)));
  }));
  // alpha inside the linear part (0 < alpha x + beta < 1, read off the clamped result).
  r.set_gradient("hard_sigmoid", unary([](E x, E y, A a) {
    Expr inside = call("logical_and", {positive(y), compare("less", y, one(y))});
    return mul(scalar_like(a.get_float("alpha"), x), as_mask(inside, x));
  }));
  r.set_gradient("hard_swish", unary([](E x, E, A) {
    Expr middle = add(div(x, scalar_like(3, x)), scalar_like(0.5, x));
    return select(compare("less", x, scalar_like(-3, x)), scalar_like(0, x),
                  select(compare("less_equal", x, scalar_like(3, x)), middle, one(x)));
  }));
  r.set_gradient("thresholded_relu", unary([](E x, E, A a) {
    return as_mask(compare("greater", x, scalar_like(a.get_float("alpha"), x)), x);
  }));
  r.set_gradient("shrink", unary([](E x, E, A a) {
    double lambd = a.get_float("lambd");
    return as_mask(call("logical_or", {compare("less", x, scalar_like(-lambd, x)), compare("greater", x, scalar_like(lambd, x))}), x);
  }));
  // Passes through inside the bounds, bounds included (as PyTorch's clamp).
  r.set_gradient("clip", unary([](E x, E, A a) {
    Expr above = compare("greater_equal", x, scalar_like(a.get_float("a_min"), x));
    Expr below = compare("less_equal", x, scalar_like(a.get_float("a_max"), x));
    return as_mask(call("logical_and", {above, below}), x);
  }));
  // Piecewise constant: a zero gradient almost everywhere (as PyTorch), so that models using
  // them still train.
  for (const char* op : {"floor", "ceil", "round", "sign"})
    r.set_gradient(op, [](E c, E) { return std::vector<Expr>{zeros_like(arg(c, 0)->checked_type)}; });
}

}  // namespace tessera::relay_ir::math_grad
