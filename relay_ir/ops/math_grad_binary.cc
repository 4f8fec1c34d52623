// Gradients of pow, maximum, minimum, mod, where, cast and prelu.
#include "relay_ir/ops/math_grad.h"

namespace tessera::relay_ir::math_grad {

namespace {

using E = const Expr&;

Expr zero(E like) { return scalar_like(0, like); }

// maximum / minimum: the cotangent goes to the operand the result came from; on ties it is
// split in halves, as PyTorch does. `wins` is greater for maximum, less for minimum.
GradientFn extremum(const char* wins) {
  return binary([wins](E a, E b, E, E g) {
    Expr share = select(compare("equal", a, b), scalar_like(0.5, g), as_mask(compare(wins, a, b), g));
    Expr ga = mul(g, share);
    return std::pair{ga, sub(g, ga)};
  });
}

}  // namespace

void register_binary(OpRegistry& r) {
  // y = a^b: dy/da = b a^(b-1), dy/db = y log(a). Like PyTorch, a zero exponent gives a zero
  // dy/da (0^-1 would make it NaN at a = 0), and dy/db is zero where a = 0 and b >= 0.
  r.set_gradient("pow", binary([](E a, E b, E y, E g) {
    Expr da = mul(mul(g, b), call("pow", {a, sub(b, scalar_like(1, b))}));
    Expr db = mul(mul(g, y), call("log", {a}));
    Expr a_zero = call("logical_and", {compare("equal", a, zero(a)), compare("greater_equal", b, zero(b))});
    return std::pair{select(compare("equal", b, zero(b)), zero(g), da), select(a_zero, zero(g), db)};
  }));
  r.set_gradient("maximum", extremum("greater"));
  r.set_gradient("minimum", extremum("less"));
  // a mod b = a - q b with q = trunc(a / b) (fmod) or floor(a / b): q is piecewise constant.
  r.set_gradient("mod", binary([](E a, E b, E y, E g) {
    Expr q = div(a, b);
    Expr whole = as_call(y).attrs.get_int("fmod") != 0
                     ? select(compare("less", q, zero(q)), call("ceil", {q}), call("floor", {q}))
                     : call("floor", {q});
    return std::pair{g, neg(mul(g, whole))};
  }));
  // The condition has no cotangent; each branch gets it where it was chosen.
  r.set_gradient("where", [](E c, E g) {
    const Expr &cond = arg(c, 0), &x = arg(c, 1), &y = arg(c, 2);
    return std::vector<Expr>{Expr(), collapse_sum_to(select(cond, g, zero(g)), x->checked_type),
                             collapse_sum_to(select(cond, zero(g), g), y->checked_type)};
  });
  // Between float types the cotangent is cast back; from integers or bool there is none.
  r.set_gradient("cast", [](E c, E g) {
    const Expr& x = arg(c, 0);
    if (!dtype_of(x).is_float()) return std::vector<Expr>{Expr()};
    return std::vector<Expr>{call("cast", {g}, {{"dtype", dtype_of(x).str()}})};
  });
  // prelu: x > 0 ? x : slope x (the slope's side at 0, as PyTorch).
  r.set_gradient("prelu", [](E c, E g) {
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
    Expr pos = compare("greater", x, zero(x));
    Expr dx = mul(g, select(pos, scalar_like(1, x), s));
    Expr ds = mul(g, select(pos, zero(x), x));
    if (axis < 0) return std::vector<Expr>{dx, collapse_sum_to(ds, slope->checked_type)};
    if (!others.empty()) ds = call("reduce_sum", {ds}, {{"axes", others}, {"keepdims", int64_t{0}}});
    return std::vector<Expr>{dx, ds};
  });
}

}  // namespace tessera::relay_ir::math_grad
