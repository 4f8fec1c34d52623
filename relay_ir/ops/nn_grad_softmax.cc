// Gradients of softmax, log_softmax (from their outputs: softmax y gives dx = y * (g - sum(g * y)),
// log_softmax y gives dx = g - exp(y) * sum(g)), hardmax (piecewise constant: zero) and the
// negative log-likelihood loss (so SoftmaxCrossEntropyLoss, imported as log_softmax + nll_loss,
// trains).
#include <limits>

#include "relay_ir/ops/nn_grad.h"
#include "runtime/error.h"

namespace tessera::relay_ir::nn_grad {

namespace {

std::vector<int64_t> softmax_axes(const Expr& c) {
  const Attrs& a = as_call(c).attrs;
  int64_t rank = static_cast<int64_t>(tensor_of(arg(c, 0)).ndim());
  int64_t axis = a.get_int("axis");
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes{axis};
  if (a.get_int("trailing"))
    for (int64_t d = axis + 1; d < rank; ++d) axes.push_back(d);
  return axes;
}

// Where target [N, d...] names class c, as a [N, C, d...] value of `dtype` (0 where the target
// is ignore_index).
Expr class_mask(const Expr& target, int64_t classes, int64_t ignore_index, DataType dtype) {
  const auto& tt = tensor_of(target);
  std::vector<int64_t> shape(tt.ndim() + 1, 1);
  shape[1] = classes;
  runtime::NDArray ids = runtime::NDArray::empty(shape, tt.dtype);
  for (int64_t c = 0; c < classes; ++c) {
    if (tt.dtype.bits == 64) ids.data_as<int64_t>()[c] = c;
    else ids.data_as<int32_t>()[c] = static_cast<int32_t>(c);
  }
  Expr t = call("expand_dims", {target}, {{"axes", std::vector<int64_t>{1}}});
  Expr hit = call("equal", {t, constant(ids)});
  bool ignorable = tt.dtype.bits == 64 ? ignore_index != std::numeric_limits<int64_t>::min()
                                       : ignore_index >= std::numeric_limits<int32_t>::min() && ignore_index <= std::numeric_limits<int32_t>::max();
  if (ignorable) hit = call("logical_and", {hit, call("logical_not", {call("equal", {t, scalar(static_cast<double>(ignore_index), tt.dtype)})})});
  return call("cast", {hit}, {{"dtype", dtype.str()}});
}

}  // namespace

void register_softmax(OpRegistry& r) {
  r.set_gradient("softmax", [](const Expr& c, const Expr& g) {
    return std::vector<Expr>{mul(c, sub(g, reduce_sum(mul(g, c), softmax_axes(c), true)))};
  });
  r.set_gradient("log_softmax", [](const Expr& c, const Expr& g) {
    return std::vector<Expr>{sub(g, mul(call("exp", {c}), reduce_sum(g, softmax_axes(c), true)))};
  });
  r.set_gradient("hardmax", [](const Expr& c, const Expr&) { return std::vector<Expr>{zeros_like(arg(c, 0)->checked_type)}; });
  // loss = -sum(input[n, t, d] * w[t]) (over counted targets; divided by their summed weight W for
  // "mean"). With M the class mask: d input = -M * w * g (/ W), and d w[c] = -sum(input * M * g)
  // over all but the classes (for "mean": (that - loss * sum(M)) / W, as W depends on w too).
  r.set_gradient("nll_loss", [](const Expr& c, const Expr& g) {
    const Expr &input = arg(c, 0), &target = arg(c, 1);
    const auto& it = tensor_of(input);
    const Attrs& attrs = as_call(c).attrs;
    const std::string& reduction = attrs.get_str("reduction");
    size_t rank = it.ndim();
    Expr mask = class_mask(target, it.shape[1], attrs.get_int("ignore_index"), it.dtype);
    bool weighted = as_call(c).args.size() > 2;
    Expr weights = weighted ? mul(mask, channel_view(arg(c, 2), rank)) : mask;
    // The cotangent per target, broadcasting along the classes.
    Expr per_target = reduction == "none" ? call("expand_dims", {g}, {{"axes", std::vector<int64_t>{1}}}) : g;
    std::vector<int64_t> all;
    for (size_t d = 0; d < rank; ++d) all.push_back(static_cast<int64_t>(d));
    Expr total;  // W, for "mean"
    if (reduction == "mean") {
      total = reduce_sum(weights, all, false);
      per_target = div(per_target, total);
    }
    std::vector<Expr> grads{neg(mul(weights, per_target)), Expr()};
    if (weighted) {
      Expr dw = reduce_sum(neg(mul(mul(input, mask), per_target)), all_but_channels(rank), false);
      if (reduction == "mean") dw = sub(dw, mul(div(mul(g, c), total), reduce_sum(mask, all_but_channels(rank), false)));
      grads.push_back(dw);
    }
    return grads;
  });
}

}  // namespace tessera::relay_ir::nn_grad
