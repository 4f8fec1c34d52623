// softmax, log_softmax, hardmax (along axis; trailing=1 also over every later dimension, as
// ONNX before opset 13) and nll_loss, with their gradients: softmax's and log_softmax's from their
// outputs (softmax y gives dx = y * (g - sum(g * y)), log_softmax y gives dx = g - exp(y) * sum(g)),
// hardmax's zero (piecewise constant), and the negative log-likelihood loss's (so
// SoftmaxCrossEntropyLoss, imported as log_softmax + nll_loss, trains).
#include <limits>

#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

Type softmax_rel(const std::vector<Type>& args, const Attrs& attrs, bool float_only) {
  const auto& x = tensor_arg(args, 0, "x");
  if (float_only) require_float(x, "x");
  else if (x.dtype.is_bool()) fail("x must be numeric, got bool");
  ops::normalize_axis(attrs.get_int("axis"), x.ndim(), "axis");
  int64_t t = attrs.get_int("trailing");
  if (t != 0 && t != 1) fail("trailing must be 0 or 1, got ", t);
  return args[0];
}

Type nll_loss_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& in = tensor_arg(args, 0, "input");
  const auto& target = tensor_arg(args, 1, "target");
  require_float(in, "input");
  nn::require_dtype(target, "target", {"int32", "int64"});
  if (in.ndim() < 2) fail("input must be [N, C, d...], got ", runtime::shape_str(in.shape));
  std::vector<int64_t> want{in.shape[0]};
  want.insert(want.end(), in.shape.begin() + 2, in.shape.end());
  if (target.shape != want)
    fail("target must have shape ", runtime::shape_str(want), " for input ", runtime::shape_str(in.shape), ", got ",
         runtime::shape_str(target.shape));
  if (args.size() > 2) {
    const auto& w = tensor_arg(args, 2, "weight");
    if (w.dtype != in.dtype) fail("weight dtype ", w.dtype.str(), " differs from input's ", in.dtype.str());
    if (w.shape != std::vector<int64_t>{in.shape[1]})
      fail("weight must have shape [", in.shape[1], "] (one per class), got ", runtime::shape_str(w.shape));
  }
  const std::string& red = attrs.get_str("reduction");
  if (red == "none") return tensor_type(target.shape, in.dtype);
  if (red != "sum" && red != "mean") fail("reduction must be none, sum or mean, got '", red, "'");
  return tensor_type({}, in.dtype);
}

std::vector<AttrSpec> axis_attrs() { return {{"axis", int64_t(-1)}, {"trailing", int64_t(0)}}; }

}  // namespace

namespace nn {
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
                                       : ignore_index >= std::numeric_limits<int32_t>::min() &&
                                             ignore_index <= std::numeric_limits<int32_t>::max();
  if (ignorable)
    hit = call("logical_and",
               {hit, call("logical_not", {call("equal", {t, scalar(static_cast<double>(ignore_index), tt.dtype)})})});
  return call("cast", {hit}, {{"dtype", dtype.str()}});
}

std::vector<Expr> softmax_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{mul(c, sub(g, reduce_sum(mul(g, c), softmax_axes(c), true)))};
}

std::vector<Expr> log_softmax_gradient(const Expr& c, const Expr& g) {
  return std::vector<Expr>{sub(g, mul(call("exp", {c}), reduce_sum(g, softmax_axes(c), true)))};
}

std::vector<Expr> hardmax_gradient(const Expr& c, const Expr&) {
  return std::vector<Expr>{zeros_like(arg(c, 0)->checked_type)};
}

// loss = -sum(input[n, t, d] * w[t]) (over counted targets; divided by their summed weight W for
// "mean"). With M the class mask: d input = -M * w * g (/ W), and d w[c] = -sum(input * M * g)
// over all but the classes (for "mean": (that - loss * sum(M)) / W, as W depends on w too).
std::vector<Expr> nll_loss_gradient(const Expr& c, const Expr& g) {
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
}

}  // namespace
}  // namespace nn

void register_nn_softmax_ops(OpRegistry& r) {
  r.add({"softmax", "exp(x - max) / sum(exp(x - max)) along axis (trailing=1: over axis and every later dimension)", 1,
         1, axis_attrs(), [](const auto& args, const Attrs& a) { return softmax_rel(args, a, true); },
         OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::softmax(in[0], a.get_int("axis"), a.get_int("trailing"));
         }),
         "softmax", nn::softmax_gradient});
  r.add({"log_softmax", "x - max - log(sum(exp(x - max))) along axis (trailing=1: over axis and every later dimension)",
         1, 1, axis_attrs(), [](const auto& args, const Attrs& a) { return softmax_rel(args, a, true); },
         OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::log_softmax(in[0], a.get_int("axis"), a.get_int("trailing"));
         }),
         "softmax", nn::log_softmax_gradient});
  r.add({"hardmax", "1 at the first maximum along axis (trailing=1: over axis and every later dimension), 0 elsewhere",
         1, 1, axis_attrs(), [](const auto& args, const Attrs& a) { return softmax_rel(args, a, false); },
         OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::hardmax(in[0], a.get_int("axis"), a.get_int("trailing"));
         }),
         "softmax", nn::hardmax_gradient});
  r.add({"nll_loss",
         "negative log-likelihood of log-probabilities input [N, C, d...] at integer targets [N, d...], optional class "
         "weights [C]; "
         "targets equal to ignore_index (default -2^63: none) count for nothing; reduction none, sum or mean (by the "
         "summed weights)",
         2,
         3,
         {{"reduction", std::string("mean")}, {"ignore_index", std::numeric_limits<int64_t>::min()}},
         nll_loss_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::nll_loss(in[0], in[1], nn::optional_input(in, 2), a.get_str("reduction"),
                                a.get_int("ignore_index"));
         }),
         "nll_loss",
         nn::nll_loss_gradient});
}

}  // namespace tessera::relay_ir
