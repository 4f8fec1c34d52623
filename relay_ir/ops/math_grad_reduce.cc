// Gradients of the reductions and of cumsum. A reduction's cotangent is first reshaped to the
// input's rank (the reduced axes kept with size 1), so that it broadcasts against the input.
#include "relay_ir/ops/math_grad.h"

namespace tessera::relay_ir::math_grad {

namespace {

using E = const Expr&;

struct Reduction {
  const TensorTypeNode* x;
  std::vector<int64_t> axes;  // normalized, every axis when the call names none
  std::vector<int64_t> kept;  // x's shape with the reduced axes 1
};

Reduction reduction_of(const Expr& c) {
  Reduction red;
  red.x = &as_tensor(arg(c, 0)->checked_type, "reduce input");
  auto rank = static_cast<int64_t>(red.x->ndim());
  red.axes = as_call(c).attrs.get_ints("axes");
  if (red.axes.empty())
    for (int64_t d = 0; d < rank; ++d) red.axes.push_back(d);
  red.kept = red.x->shape;
  for (auto& a : red.axes) {
    a = a < 0 ? a + rank : a;
    red.kept[a] = 1;
  }
  return red;
}

// A value shaped like the reduction's result, with the reduced axes back as size 1.
Expr kept(const Reduction& red, E value) {
  return shape_of(value) == red.kept ? value : call("reshape", {value}, {{"shape", red.kept}});
}

Expr to_input_shape(const Reduction& red, E value) { return call("broadcast_to", {value}, {{"shape", red.x->shape}}); }

// The same reduction of another value, keeping the reduced axes.
Expr reduce_kept(const char* op, const Reduction& red, E value) {
  return call(op, {value}, {{"axes", red.axes}, {"keepdims", int64_t{1}}});
}

// A reduction's gradient from the kept-shaped cotangent g, the kept-shaped result y and x.
using ReduceRule = std::function<Expr(const Reduction& red, E x, E y, E g)>;

GradientFn reduction_gradient(ReduceRule rule) {
  return [rule](E c, E g) {
    Reduction red = reduction_of(c);
    return std::vector<Expr>{rule(red, arg(c, 0), kept(red, c), kept(red, g))};
  };
}

// reduce_max / reduce_min: to the elements equal to the result; ties share it evenly (as
// PyTorch's amax / amin).
Expr extremum(const Reduction& red, E x, E y, E g) {
  Expr hit = as_mask(compare("equal", x, y), x);
  return div(mul(hit, g), reduce_kept("reduce_sum", red, hit));
}

// reduce_prod: the product of the other elements, without dividing by zero. With x's zeros
// replaced by ones (safe), it is prod(safe) / safe times w, where w is, for a zero element,
// 1 if it is the only zero and 0 otherwise, and for the others the product of the zero
// elements themselves (x where it is zero, 1 elsewhere): 0 as soon as there is a zero, but
// with the right derivative, so that the gradient of this gradient stays exact where one
// element is zero (at two or more zeros it is exact in value only).
Expr product(const Reduction& red, E x, E, E g) {
  Expr one = scalar_like(1, x);
  Expr is_zero = compare("equal", x, scalar_like(0, x));
  Expr safe = select(is_zero, one, x);
  Expr zeros = reduce_kept("reduce_sum", red, as_mask(is_zero, x));
  Expr only_zero = as_mask(compare("equal", zeros, one), x);
  Expr zero_product = reduce_kept("reduce_prod", red, select(is_zero, x, one));
  Expr w = select(is_zero, only_zero, zero_product);
  return mul(mul(g, div(reduce_kept("reduce_prod", red, safe), safe)), w);
}

}  // namespace

void register_reduce(OpRegistry& r) {
  r.set_gradient("reduce_sum", reduction_gradient([](const Reduction& red, E, E, E g) { return to_input_shape(red, g); }));
  r.set_gradient("reduce_mean", reduction_gradient([](const Reduction& red, E x, E, E g) {
    int64_t count = 1;
    for (int64_t a : red.axes) count *= red.x->shape[a];
    return to_input_shape(red, div(g, scalar_like(static_cast<double>(count), x)));
  }));
  r.set_gradient("reduce_max", reduction_gradient(extremum));
  r.set_gradient("reduce_min", reduction_gradient(extremum));
  r.set_gradient("reduce_prod", reduction_gradient(product));
  r.set_gradient("reduce_l1", reduction_gradient([](const Reduction&, E x, E, E g) { return mul(g, call("sign", {x})); }));
  r.set_gradient("reduce_sum_square", reduction_gradient([](const Reduction&, E x, E, E g) { return mul(g, mul(scalar_like(2, x), x)); }));
  // x / ||x||, and 0 where the norm is 0 (x is all zeros there).
  r.set_gradient("reduce_l2", reduction_gradient([](const Reduction&, E x, E y, E g) {
    Expr norm = select(compare("equal", y, scalar_like(0, y)), scalar_like(1, y), y);
    return mul(g, div(x, norm));
  }));
  // log(sum x): 1 / sum, the sum being e^y.
  r.set_gradient("reduce_log_sum", reduction_gradient([](const Reduction& red, E, E y, E g) {
    return to_input_shape(red, div(g, call("exp", {y})));
  }));
  r.set_gradient("reduce_log_sum_exp", reduction_gradient([](const Reduction&, E x, E y, E g) {
    return mul(g, call("exp", {sub(x, y)}));
  }));
  // A running sum's cotangent is the running sum of the cotangent the other way round.
  r.set_gradient("cumsum", [](E c, E g) {
    Attrs attrs = as_call(c).attrs;
    attrs.set("reverse", int64_t{1 - attrs.get_int("reverse")});
    return std::vector<Expr>{call("cumsum", {g}, attrs)};
  });
}

}  // namespace tessera::relay_ir::math_grad
