#include "tensor_ir/ops/math_activation.h"

#include <cmath>
#include <limits>

#include "runtime/error.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/math.h"

namespace tessera::tensor_ir::ops {

namespace ti = tessera::tensor_ir;

namespace {

void require_float(const Tensor& x, const char* op) {
  if (!x.dtype().is_float()) fail(op, ": ", x.name(), " must be a float tensor, got ", x.dtype().str());
}

// A float activation f(v, c) where c(value) makes a constant of x's dtype.
Tensor activation(const Tensor& x, const char* name, const std::function<Expr(Expr, std::function<Expr(double)>)>& f) {
  require_float(x, name);
  DataType t = x.dtype();
  auto c = [t](double v) { return make_const(t, v); };
  return map(
      x, [&](Expr v) { return f(v, c); }, name);
}

Expr softplus_expr(Expr v, const std::function<Expr(double)>& c) {
  // max(v, 0) + log(1 + e^-|v|): e^v overflows for large v, where softplus(v) = v.
  return max(v, c(0)) + ti::log(c(1) + ti::exp(c(0) - ti::abs(v)));
}

}  // namespace

Tensor leaky_relu(const Tensor& x, double alpha) {
  return activation(x, "leaky_relu", [&](Expr v, auto c) { return select(v < c(0), v * c(alpha), v); });
}

Tensor elu(const Tensor& x, double alpha) {
  return activation(x, "elu", [&](Expr v, auto c) { return select(v < c(0), c(alpha) * (ti::exp(v) - c(1)), v); });
}

Tensor selu(const Tensor& x, double alpha, double gamma) {
  return activation(x, "selu", [&](Expr v, auto c) {
    return select(v <= c(0), c(gamma * alpha) * (ti::exp(v) - c(1)), c(gamma) * v);
  });
}

Tensor celu(const Tensor& x, double alpha) {
  if (alpha == 0) fail("celu: alpha must not be 0");
  return activation(
      x, "celu", [&](Expr v, auto c) { return max(v, c(0)) + min(c(0), c(alpha) * (ti::exp(v / c(alpha)) - c(1))); });
}

Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
  return activation(x, "hard_sigmoid", [&](Expr v, auto c) { return min(max(v * c(alpha) + c(beta), c(0)), c(1)); });
}

Tensor hard_swish(const Tensor& x) {
  return activation(x, "hard_swish", [&](Expr v, auto c) { return v * min(max(v * c(1.0 / 6) + c(0.5), c(0)), c(1)); });
}

Tensor softplus(const Tensor& x) { return activation(x, "softplus", softplus_expr); }

Tensor softsign(const Tensor& x) {
  return activation(x, "softsign", [&](Expr v, auto c) { return v / (c(1) + ti::abs(v)); });
}

Tensor mish(const Tensor& x) {
  return activation(x, "mish", [&](Expr v, auto c) { return v * ti::tanh(softplus_expr(v, c)); });
}

Tensor thresholded_relu(const Tensor& x, double alpha) {
  return activation(x, "thresholded_relu", [&](Expr v, auto c) { return select(v > c(alpha), v, c(0)); });
}

Tensor shrink(const Tensor& x, double bias, double lambd) {
  DataType t = x.dtype();
  if (t.is_bool()) fail("shrink: ", x.name(), " must be numeric, got bool");
  return map(
      x,
      [&](Expr v) {
        // Integers compute in float64 (bias and lambda are floats) and convert back.
        DataType ct = t.is_float() ? t : runtime::kFloat64;
        Expr w = ti::cast(ct, v);
        auto c = [&](double d) { return make_const(ct, d); };
        Expr r = select(w < c(-lambd), w + c(bias), select(w > c(lambd), w - c(bias), c(0)));
        return ti::cast(t, r);
      },
      "shrink");
}

Tensor prelu(const Tensor& x, const Tensor& slope, int channel_axis) {
  require_float(x, "prelu");
  if (slope.dtype() != x.dtype())
    fail("prelu: slope ", slope.name(), " is ", slope.dtype().str(), ", the input is ", x.dtype().str());
  if (channel_axis >= 0) {
    if (channel_axis >= static_cast<int>(x.ndim()) || slope.ndim() != 1 || slope->dim(0) != x->dim(channel_axis))
      fail("prelu: a per-channel slope must be 1-D with the size of axis ", channel_axis, " of the input");
  } else {
    std::vector<Expr> shape = broadcast_shape(x, slope);
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape.size() != x.ndim() || !arith::equal_as_polynomials(shape[d], x->shape[d]))
        fail("prelu: slope ", slope.name(), " must broadcast to the input's shape");
  }
  return compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> si = channel_axis >= 0 ? std::vector<Expr>{i[channel_axis]} : broadcast_indices(slope, i);
        // Binding the slope first lets the select blend rather than mask its load.
        return let(slope(si), [&](Expr s) {
          Expr v = x(std::vector<Expr>(i.begin(), i.end()));
          return select(v < make_zero(x.dtype()), v * s, v);
        });
      },
      "prelu", "broadcast");
}

Tensor clip(const Tensor& x, double lo, double hi) {
  DataType t = x.dtype();
  if (t.is_bool()) fail("clip: ", x.name(), " must be numeric, got bool");
  // Bounds beyond the dtype's range clamp nothing (and would not convert exactly).
  bool has_lo = t.is_float() ? lo != -std::numeric_limits<double>::infinity() : lo > t.min_value();
  bool has_hi = t.is_float() ? hi != std::numeric_limits<double>::infinity() : hi < t.max_value();
  if (!t.is_float()) {
    lo = std::ceil(lo);
    hi = std::floor(hi);
  }
  return map(
      x,
      [&](Expr v) {
        // min(max(v, lo), hi) as numpy does it: NaN stays NaN, lo > hi gives hi.
        Expr r = has_lo ? select(v < make_const(t, lo), make_const(t, lo), v) : v;
        if (has_hi) r = let(r, [&](Expr u) { return select(u > make_const(t, hi), make_const(t, hi), u); });
        return r;
      },
      "clip");
}

}  // namespace tessera::tensor_ir::ops
