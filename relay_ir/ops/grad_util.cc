#include "relay_ir/ops/grad_util.h"

#include <cstring>

#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

const CallNode& as_call(const Expr& call) { return *call.as<CallNode>(); }
const Expr& arg(const Expr& call, size_t i) { return as_call(call).args.at(i); }

const TensorTypeNode& tensor_of(const Expr& e) {
  if (!e->checked_type) infer_type(e);
  return as_tensor(e->checked_type, "value");
}

Expr filled_like(const Type& type, double value) {
  const auto& t = as_tensor(type, "filled_like");
  runtime::NDArray a = runtime::NDArray::empty(t.shape, t.dtype);
  for (int64_t i = 0; i < a.numel(); ++i) {
    switch (t.dtype.bits) {
      case 64:
        a.data_as<double>()[i] = value;
        break;
      case 32:
        a.data_as<float>()[i] = static_cast<float>(value);
        break;
      case 16:
        fail("filled_like: float16 gradients are computed in float32; cast first");
      default:
        fail("filled_like: ", t.dtype.str(), " is not differentiable");
    }
  }
  return constant(a);
}

Expr zeros_like(const Type& type) { return filled_like(type, 0); }
Expr ones_like(const Type& type) { return filled_like(type, 1); }
Expr scalar_of(double value, DataType dtype) { return scalar(value, dtype); }
Expr scalar_like(double value, const Expr& like) { return scalar_of(value, tensor_of(like).dtype); }

Expr collapse_sum_to(const Expr& grad, const Type& target) {
  infer_type(grad);
  const auto& g = as_tensor(grad->checked_type, "gradient");
  const auto& t = as_tensor(target, "gradient target");
  if (g.shape == t.shape) return grad;
  // Axes of the result the target does not have (leading) or has with size 1.
  std::vector<int64_t> axes;
  size_t lead = g.shape.size() - t.shape.size();
  for (size_t d = 0; d < g.shape.size(); ++d)
    if (d < lead || (t.shape[d - lead] == 1 && g.shape[d] != 1)) axes.push_back(static_cast<int64_t>(d));
  Expr summed = axes.empty() ? grad : call("reduce_sum", {grad}, {{"axes", axes}, {"keepdims", int64_t(1)}});
  return call("reshape", {summed}, {{"shape", t.shape}});
}

Expr add(const Expr& a, const Expr& b) { return call("add", {a, b}); }
Expr sub(const Expr& a, const Expr& b) { return call("sub", {a, b}); }
Expr mul(const Expr& a, const Expr& b) { return call("mul", {a, b}); }
Expr div(const Expr& a, const Expr& b) { return call("div", {a, b}); }
Expr neg(const Expr& a) { return call("neg", {a}); }
Expr compare(const char* op, const Expr& a, const Expr& b) { return call(op, {a, b}); }
Expr select(const Expr& condition, const Expr& a, const Expr& b) { return call("where", {condition, a, b}); }
Expr as_mask(const Expr& condition, const Expr& like) {
  return call("cast", {condition}, {{"dtype", tensor_of(like).dtype.str()}});
}

GradientFn elementwise_gradient(Derivative derivative) {
  return [derivative](const Expr& c, const Expr& g) {
    return std::vector<Expr>{mul(g, derivative(arg(c, 0), c, as_call(c).attrs))};
  };
}

GradientFn broadcast_gradient(BinaryRule rule) {
  return [rule](const Expr& c, const Expr& g) {
    const Expr &a = arg(c, 0), &b = arg(c, 1);
    auto [ga, gb] = rule(a, b, c, g);
    return std::vector<Expr>{ga ? collapse_sum_to(ga, a->checked_type) : Expr(),
                             gb ? collapse_sum_to(gb, b->checked_type) : Expr()};
  };
}

}  // namespace tessera::relay_ir
