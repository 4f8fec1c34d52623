// Activation functions and clip.
#include <cmath>
#include <limits>

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
    fail("slope ", runtime::shape_str(slope.shape), " does not broadcast to the input's shape ", runtime::shape_str(x.shape));
  }
  return args[0];
}

Type clip_relation(const std::vector<Type>& args, const Attrs& attrs) {
  if (std::isnan(attrs.get_float("a_min")) || std::isnan(attrs.get_float("a_max"))) fail("clip bounds must not be NaN");
  return unary_numeric(args, attrs);
}

// A unary float op with float attributes.
template <typename F>
void activation(OpRegistry& r, const std::string& name, const std::string& doc, std::vector<AttrSpec> attrs, F f) {
  r.add({name, doc, 1, 1, std::move(attrs), unary_float, OpPattern::Elemwise, single_output(f)});
}

}  // namespace

void register_math_activation_ops(OpRegistry& r) {
  activation(r, "leaky_relu", "x < 0 ? alpha x : x", {{"alpha", 0.01}},
             [](const In& in, const Attrs& a) { return ops::leaky_relu(in[0], a.get_float("alpha")); });
  activation(r, "elu", "x < 0 ? alpha (e^x - 1) : x", {{"alpha", 1.0}},
             [](const In& in, const Attrs& a) { return ops::elu(in[0], a.get_float("alpha")); });
  activation(r, "selu", "gamma (x <= 0 ? alpha (e^x - 1) : x)", {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}},
             [](const In& in, const Attrs& a) { return ops::selu(in[0], a.get_float("alpha"), a.get_float("gamma")); });
  activation(r, "celu", "max(0, x) + min(0, alpha (e^(x/alpha) - 1))", {{"alpha", 1.0}},
             [](const In& in, const Attrs& a) { return ops::celu(in[0], a.get_float("alpha")); });
  activation(r, "hard_sigmoid", "clamp(alpha x + beta, 0, 1)", {{"alpha", 0.2}, {"beta", 0.5}},
             [](const In& in, const Attrs& a) { return ops::hard_sigmoid(in[0], a.get_float("alpha"), a.get_float("beta")); });
  activation(r, "hard_swish", "x clamp(x / 6 + 1/2, 0, 1)", {}, [](const In& in, const Attrs&) { return ops::hard_swish(in[0]); });
  activation(r, "softplus", "log(1 + e^x)", {}, [](const In& in, const Attrs&) { return ops::softplus(in[0]); });
  activation(r, "softsign", "x / (1 + |x|)", {}, [](const In& in, const Attrs&) { return ops::softsign(in[0]); });
  activation(r, "mish", "x tanh(softplus(x))", {}, [](const In& in, const Attrs&) { return ops::mish(in[0]); });
  activation(r, "thresholded_relu", "x > alpha ? x : 0", {{"alpha", 1.0}},
             [](const In& in, const Attrs& a) { return ops::thresholded_relu(in[0], a.get_float("alpha")); });
  r.add({"shrink", "x < -lambd ? x + bias : x > lambd ? x - bias : 0", 1, 1, {{"bias", 0.0}, {"lambd", 0.5}},
         unary_numeric, OpPattern::Elemwise, single_output([](const In& in, const Attrs& a) {
           return ops::shrink(in[0], a.get_float("bias"), a.get_float("lambd"));
         })});
  r.add({"prelu", "x < 0 ? slope x : x; slope broadcasts to x, or is per channel along channel_axis (>= 0)", 2, 2,
         {{"channel_axis", int64_t{-1}}}, prelu_relation, OpPattern::Broadcast, single_output([](const In& in, const Attrs& a) {
           return ops::prelu(in[0], in[1], static_cast<int>(a.get_int("channel_axis")));
         })});
  const double inf = std::numeric_limits<double>::infinity();
  r.add({"clip", "min(max(x, a_min), a_max), any numeric dtype; NaN stays NaN", 1, 1, {{"a_min", -inf}, {"a_max", inf}},
         clip_relation, OpPattern::Elemwise, single_output([](const In& in, const Attrs& a) {
           return ops::clip(in[0], a.get_float("a_min"), a.get_float("a_max"));
         })});
}

}  // namespace tessera::relay_ir
