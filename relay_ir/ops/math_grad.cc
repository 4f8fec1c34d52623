// Gradients of the math family's ops: each returns the cotangent of every argument of a call
// (broadcast operands summed back to their shapes) as graph expressions.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/grad_util.h"

namespace tessera::relay_ir {

namespace {

const CallNode& as_call(const Expr& e) { return *e.as<CallNode>(); }
const Expr& arg(const Expr& call, size_t i) { return as_call(call).args.at(i); }
DataType dtype_of(const Expr& e) { return as_tensor(e->checked_type, "value").dtype; }

// d(a op b): the cotangents of both operands before the broadcast is undone.
using BinaryRule = std::function<std::pair<Expr, Expr>(const Expr& a, const Expr& b, const Expr& out, const Expr& g)>;

GradientFn binary(BinaryRule rule) {
  return [rule](const Expr& call, const Expr& g) {
    const Expr &a = arg(call, 0), &b = arg(call, 1);
    auto [ga, gb] = rule(a, b, call, g);
    return std::vector<Expr>{ga ? collapse_sum_to(ga, a->checked_type) : Expr(), gb ? collapse_sum_to(gb, b->checked_type) : Expr()};
  };
}

// d f(x) = g * f'(x), with f'(x) given from x and the result y.
GradientFn unary(std::function<Expr(const Expr& x, const Expr& y)> derivative) {
  return [derivative](const Expr& call, const Expr& g) { return std::vector<Expr>{mul(g, derivative(arg(call, 0), call))}; };
}

}  // namespace

void register_math_gradients(OpRegistry& r) {
  r.set_gradient("add", binary([](const Expr&, const Expr&, const Expr&, const Expr& g) { return std::pair{g, g}; }));
  r.set_gradient("sub", binary([](const Expr&, const Expr&, const Expr&, const Expr& g) { return std::pair{g, neg(g)}; }));
  r.set_gradient("mul", binary([](const Expr& a, const Expr& b, const Expr&, const Expr& g) { return std::pair{mul(g, b), mul(g, a)}; }));
  r.set_gradient("div", binary([](const Expr&, const Expr& b, const Expr& y, const Expr& g) {
    Expr ga = div(g, b);
    return std::pair{ga, neg(mul(ga, y))};  // d(a/b)/db = -(a/b)/b
  }));
  r.set_gradient("neg", [](const Expr&, const Expr& g) { return std::vector<Expr>{neg(g)}; });
  r.set_gradient("exp", unary([](const Expr&, const Expr& y) { return y; }));
  r.set_gradient("log", unary([](const Expr& x, const Expr&) { return div(scalar_of(1, dtype_of(x)), x); }));
  r.set_gradient("sqrt", unary([](const Expr&, const Expr& y) { return div(scalar_of(0.5, dtype_of(y)), y); }));
  r.set_gradient("tanh", unary([](const Expr&, const Expr& y) { return sub(scalar_of(1, dtype_of(y)), mul(y, y)); }));
  r.set_gradient("sigmoid", unary([](const Expr&, const Expr& y) { return mul(y, sub(scalar_of(1, dtype_of(y)), y)); }));
  r.set_gradient("relu", unary([](const Expr& x, const Expr&) {
    return call("cast", {call("greater", {x, scalar_of(0, dtype_of(x))})}, {{"dtype", dtype_of(x).str()}});
  }));
  // Reductions: the cotangent is broadcast back over the reduced axes (divided by their size for a mean).
  auto reduce_grad = [](bool mean) {
    return [mean](const Expr& node, const Expr& g) {
      const Expr& x = arg(node, 0);
      const auto& xt = as_tensor(x->checked_type, "reduce input");
      const auto& yt = as_tensor(node->checked_type, "reduce output");
      const auto& attrs = as_call(node).attrs;
      std::vector<int64_t> axes = attrs.get_ints("axes");
      if (axes.empty())
        for (size_t d = 0; d < xt.shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
      for (auto& a : axes) a = a < 0 ? a + static_cast<int64_t>(xt.shape.size()) : a;
      // The cotangent with the reduced axes kept (size 1), so it broadcasts against x.
      std::vector<int64_t> kept = xt.shape;
      int64_t count = 1;
      for (int64_t a : axes) {
        count *= kept[a];
        kept[a] = 1;
      }
      Expr gk = yt.shape == kept ? g : call("reshape", {g}, {{"shape", kept}});
      Expr full = call("broadcast_to", {gk}, {{"shape", xt.shape}});
      return std::vector<Expr>{mean ? div(full, scalar_of(static_cast<double>(count), xt.dtype)) : full};
    };
  };
  r.set_gradient("reduce_sum", reduce_grad(false));
  r.set_gradient("reduce_mean", reduce_grad(true));
}

}  // namespace tessera::relay_ir
