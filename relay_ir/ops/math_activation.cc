// Activation functions and clip, each with its gradient. At kinks the gradients follow PyTorch
// (the one-sided derivative it picks; clip passes the cotangent at its bounds).
#include <cmath>
#include <limits>

#include "relay_ir/ops/grad_util.h"
#include "relay_ir/ops/math_ops.h"
#include "relay_ir/ops/type_relations.h"
#include "runtime/error.h"
#include "tensor_ir/ops/math_activation.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using tensor_ir::Tensor;

namespace {

using In = std::vector<Tensor>;

Type prelu_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = as_tensor(args.at(0), "input");
  const auto& slope = as_tensor(args.at(1), "slope");
  if (!x.dtype.is_float()) fail("input must be a float tensor, got ", x.dtype.str());
  if (slope.dtype != x.dtype) fail("slope is ", slope.dtype.str(), ", the input ", x.dtype.str());
  int64_t axis = attrs.get_int("channel_axis");
  if (axis >= 0) {
    if (axis >= static_cast<int64_t>(x.ndim()) || slope.ndim() != 1 || slope.shape[0] != x.shape[axis])
      fail("a per-channel slope (channel_axis ", axis, ") must be 1-D with the size of that input axis; slope is ",
           runtime::shape_str(slope.shape), ", input ", runtime::shape_str(x.shape));
  } else if (broadcast_shapes(x.shape, slope.shape) != x.shape) {
    fail("slope ", runtime::shape_str(slope.shape), " does not broadcast to the input's shape ",
         runtime::shape_str(x.shape));
  }
  return args[0];
}

Type clip_relation(const std::vector<Type>& args, const Attrs& attrs) {
  if (std::isnan(attrs.get_float("a_min")) || std::isnan(attrs.get_float("a_max"))) fail("clip bounds must not be NaN");
  return unary_numeric(args, attrs);
}

// A unary float op with float attributes.
template <typename F>
void activation(OpRegistry& r, const std::string& name, const std::string& doc, std::vector<AttrSpec> attrs, F f,
                Derivative derivative) {
  r.add({name, doc, 1, 1, std::move(attrs), unary_float, OpPattern::Elemwise, single_output(f), "elemwise",
         elementwise_gradient(std::move(derivative))});
}

using E = const Expr&;
using A = const Attrs&;

Expr one(E like) { return scalar_like(1, like); }
Expr square(E x) { return mul(x, x); }
Expr unary_call(const char* op, E x) { return call(op, {x}); }
Expr positive(E x) { return compare("greater", x, scalar_like(0, x)); }

// For x <= 0 the result y is alpha (e^x - 1), so y + alpha is the derivative alpha e^x.
Expr elu_derivative(E x, E y, A a) { return select(positive(x), one(x), add(y, scalar_like(a.get_float("alpha"), x))); }

Expr selu_derivative(E x, E y, A a) {
  double gamma = a.get_float("gamma"), alpha = a.get_float("alpha");
  return select(positive(x), scalar_like(gamma, x), add(y, scalar_like(gamma * alpha, x)));
}

// For x <= 0, y = alpha (e^(x/alpha) - 1): the derivative e^(x/alpha) is y / alpha + 1.
Expr celu_derivative(E x, E y, A a) {
  return select(positive(x), one(x), add(div(y, scalar_like(a.get_float("alpha"), x)), one(x)));
}

// alpha inside the linear part (0 < alpha x + beta < 1, read off the clamped result).
Expr hard_sigmoid_derivative(E x, E y, A a) {
  Expr inside = call("logical_and", {positive(y), compare("less", y, one(y))});
  return mul(scalar_like(a.get_float("alpha"), x), as_mask(inside, x));
}

Expr hard_swish_derivative(E x, E, A) {
  Expr middle = add(div(x, scalar_like(3, x)), scalar_like(0.5, x));
  return select(compare("less", x, scalar_like(-3, x)), scalar_like(0, x),
                select(compare("less_equal", x, scalar_like(3, x)), middle, one(x)));
}

Expr softsign_derivative(E x, E, A) {
  Expr d = add(one(x), unary_call("abs", x));
  return div(one(x), square(d));
}

// mish = x tanh(softplus(x)): tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
Expr mish_derivative(E x, E, A) {
  Expr t = unary_call("tanh", unary_call("softplus", x));
  return add(t, mul(mul(x, unary_call("sigmoid", x)), sub(one(x), square(t))));
}

Expr shrink_derivative(E x, E, A a) {
  double lambd = a.get_float("lambd");
  return as_mask(
      call("logical_or", {compare("less", x, scalar_like(-lambd, x)), compare("greater", x, scalar_like(lambd, x))}),
      x);
}

// Passes through inside the bounds, bounds included (as PyTorch's clamp).
Expr clip_derivative(E x, E, A a) {
  Expr above = compare("greater_equal", x, scalar_like(a.get_float("a_min"), x));
  Expr below = compare("less_equal", x, scalar_like(a.get_float("a_max"), x));
  return as_mask(call("logical_and", {above, below}), x);
}

// prelu: x > 0 ? x : slope x (the slope's side at 0, as PyTorch).
std::vector<Expr> prelu_gradient(E c, E g) {
  const Expr &x = arg(c, 0), &slope = arg(c, 1);
  const auto& xt = as_tensor(x->checked_type, "prelu input");
  int64_t axis = as_call(c).attrs.get_int("channel_axis");
  Expr s = slope;
  std::vector<int64_t> others;  // the axes a per-channel slope is summed over
  if (axis >= 0) {
    std::vector<int64_t> shape(xt.ndim(), 1);
    shape[axis] = xt.shape[axis];
    s = call("reshape", {slope}, {{"shape", shape}});
    for (int64_t d = 0; d < static_cast<int64_t>(xt.ndim()); ++d)
      if (d != axis) others.push_back(d);
  }
  Expr pos = positive(x);
  Expr dx = mul(g, select(pos, scalar_like(1, x), s));
  Expr ds = mul(g, select(pos, scalar_like(0, x), x));
  if (axis < 0) return {dx, collapse_sum_to(ds, slope->checked_type)};
  if (!others.empty()) ds = call("reduce_sum", {ds}, {{"axes", others}, {"keepdims", int64_t{0}}});
  return {dx, ds};
}

}  // namespace

void register_math_activation_ops(OpRegistry& r) {
  activation(
      r, "leaky_relu", "x < 0 ? alpha x : x", {{"alpha", 0.01}},
      [](const In& in, const Attrs& a) { return ops::leaky_relu(in[0], a.get_float("alpha")); },
      [](E x, E, A a) { return select(positive(x), one(x), scalar_like(a.get_float("alpha"), x)); });
  activation(
      r, "elu", "x < 0 ? alpha (e^x - 1) : x", {{"alpha", 1.0}},
      [](const In& in, const Attrs& a) { return ops::elu(in[0], a.get_float("alpha")); }, elu_derivative);
  activation(
      r, "selu", "gamma (x <= 0 ? alpha (e^x - 1) : x)",
      {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}},
      [](const In& in, const Attrs& a) { return ops::selu(in[0], a.get_float("alpha"), a.get_float("gamma")); },
      selu_derivative);
  activation(
      r, "celu", "max(0, x) + min(0, alpha (e^(x/alpha) - 1))", {{"alpha", 1.0}},
      [](const In& in, const Attrs& a) { return ops::celu(in[0], a.get_float("alpha")); }, celu_derivative);
  activation(
      r, "hard_sigmoid", "clamp(alpha x + beta, 0, 1)", {{"alpha", 0.2}, {"beta", 0.5}},
      [](const In& in, const Attrs& a) { return ops::hard_sigmoid(in[0], a.get_float("alpha"), a.get_float("beta")); },
      hard_sigmoid_derivative);
  activation(
      r, "hard_swish", "x clamp(x / 6 + 1/2, 0, 1)", {},
      [](const In& in, const Attrs&) { return ops::hard_swish(in[0]); }, hard_swish_derivative);
  activation(
      r, "softplus", "log(1 + e^x)", {}, [](const In& in, const Attrs&) { return ops::softplus(in[0]); },
      [](E x, E, A) { return unary_call("sigmoid", x); });
  activation(
      r, "softsign", "x / (1 + |x|)", {}, [](const In& in, const Attrs&) { return ops::softsign(in[0]); },
      softsign_derivative);
  activation(
      r, "mish", "x tanh(softplus(x))", {}, [](const In& in, const Attrs&) { return ops::mish(in[0]); },
      mish_derivative);
  activation(
      r, "thresholded_relu", "x > alpha ? x : 0", {{"alpha", 1.0}},
      [](const In& in, const Attrs& a) { return ops::thresholded_relu(in[0], a.get_float("alpha")); },
      [](E x, E, A a) { return as_mask(compare("greater", x, scalar_like(a.get_float("alpha"), x)), x); });
  r.add({"shrink",
         "x < -lambd ? x + bias : x > lambd ? x - bias : 0",
         1,
         1,
         {{"bias", 0.0}, {"lambd", 0.5}},
         unary_numeric,
         OpPattern::Elemwise,
         single_output([](const In& in, const Attrs& a) {
           return ops::shrink(in[0], a.get_float("bias"), a.get_float("lambd"));
         }),
         "elemwise",
         elementwise_gradient(shrink_derivative)});
  r.add({"prelu",
         "x < 0 ? slope x : x; slope broadcasts to x, or is per channel along channel_axis (>= 0)",
         2,
         2,
         {{"channel_axis", int64_t{-1}}},
         prelu_relation,
         OpPattern::Broadcast,
         single_output([](const In& in, const Attrs& a) {
           return ops::prelu(in[0], in[1], static_cast<int>(a.get_int("channel_axis")));
         }),
         "broadcast",
         prelu_gradient});
  const double inf = std::numeric_limits<double>::infinity();
  r.add({"clip",
         "min(max(x, a_min), a_max), any numeric dtype; NaN stays NaN",
         1,
         1,
         {{"a_min", -inf}, {"a_max", inf}},
         clip_relation,
         OpPattern::Elemwise,
         single_output(
             [](const In& in, const Attrs& a) { return ops::clip(in[0], a.get_float("a_min"), a.get_float("a_max")); }),
         "elemwise",
         elementwise_gradient(clip_derivative)});
}

}  // namespace tessera::relay_ir
