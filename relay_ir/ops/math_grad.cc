// Gradients of the math family's ops: each returns the cotangent of every argument of a call
// (broadcast operands summed back to their shapes) as graph expressions. The arithmetic core
// is here; math_grad_unary.cc, math_grad_binary.cc and math_grad_reduce.cc hold the rest.
#include "relay_ir/ops/math_grad.h"

#include "relay_ir/ops/families.h"
#include "relay_ir/transforms/infer_type.h"

namespace tessera::relay_ir {

namespace math_grad {

namespace {

// Cotangents built by the pass or by other gradients may not be typed yet.
const TensorTypeNode& tensor_of(const Expr& e) {
  if (!e->checked_type) infer_type(e);
  return as_tensor(e->checked_type, "value");
}

}  // namespace

const CallNode& as_call(const Expr& e) { return *e.as<CallNode>(); }
const Expr& arg(const Expr& call, size_t i) { return as_call(call).args.at(i); }
DataType dtype_of(const Expr& e) { return tensor_of(e).dtype; }
const std::vector<int64_t>& shape_of(const Expr& e) { return tensor_of(e).shape; }
Expr scalar_like(double value, const Expr& like) { return scalar_of(value, dtype_of(like)); }
Expr select(const Expr& condition, const Expr& a, const Expr& b) { return call("where", {condition, a, b}); }
Expr as_mask(const Expr& condition, const Expr& like) { return call("cast", {condition}, {{"dtype", dtype_of(like).str()}}); }
Expr compare(const char* op, const Expr& a, const Expr& b) { return call(op, {a, b}); }

GradientFn unary(Derivative derivative) {
  return [derivative](const Expr& c, const Expr& g) {
    return std::vector<Expr>{mul(g, derivative(arg(c, 0), c, as_call(c).attrs))};
  };
}

GradientFn binary(BinaryRule rule) {
  return [rule](const Expr& c, const Expr& g) {
    const Expr &a = arg(c, 0), &b = arg(c, 1);
    auto [ga, gb] = rule(a, b, c, g);
    return std::vector<Expr>{ga ? collapse_sum_to(ga, a->checked_type) : Expr(), gb ? collapse_sum_to(gb, b->checked_type) : Expr()};
  };
}

}  // namespace math_grad

void register_math_gradients(OpRegistry& r) {
  using namespace math_grad;
  using E = const Expr&;
  r.set_gradient("add", binary([](E, E, E, E g) { return std::pair{g, g}; }));
  r.set_gradient("sub", binary([](E, E, E, E g) { return std::pair{g, neg(g)}; }));
  r.set_gradient("mul", binary([](E a, E b, E, E g) { return std::pair{mul(g, b), mul(g, a)}; }));
  r.set_gradient("div", binary([](E, E b, E y, E g) {
    Expr ga = div(g, b);
    return std::pair{ga, neg(mul(ga, y))};  // d(a/b)/db = -(a/b)/b
  }));
  r.set_gradient("neg", [](E, E g) { return std::vector<Expr>{neg(g)}; });
  r.set_gradient("exp", unary([](E, E y, const Attrs&) { return y; }));
  r.set_gradient("log", unary([](E x, E, const Attrs&) { return div(scalar_like(1, x), x); }));
  r.set_gradient("sqrt", unary([](E, E y, const Attrs&) { return div(scalar_like(0.5, y), y); }));
  r.set_gradient("tanh", unary([](E, E y, const Attrs&) { return sub(scalar_like(1, y), mul(y, y)); }));
  r.set_gradient("sigmoid", unary([](E, E y, const Attrs&) { return mul(y, sub(scalar_like(1, y), y)); }));
  r.set_gradient("relu", unary([](E x, E, const Attrs&) { return as_mask(compare("greater", x, scalar_like(0, x)), x); }));
  register_unary(r);
  register_binary(r);
  register_reduce(r);
}

}  // namespace tessera::relay_ir
