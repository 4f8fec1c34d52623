// Converters of ONNX BatchNormalization (inference; training mode, opset 14's training_mode=1,
// as batch_norm_train), InstanceNormalization, LayerNormalization, LRN and
// MeanVarianceNormalization (opsets 1-17), and of the later GroupNormalization (18, 21),
// LpNormalization (22's types) and RMSNormalization (23) as compositions of elementwise ops and
// reductions, which the graph passes fuse.
#include <cmath>

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_nn.h"
#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

bool wants_output(const ConvertContext& c, int i) { return c.node().output_size() > i && !c.node().output(i).empty(); }

// An ONNX TensorProto element type as a float dtype name (LayerNormalization's stash_type).
std::string float_type_name(const ConvertContext& c, int64_t onnx_type) {
  switch (onnx_type) {
    case ::onnx::TensorProto::FLOAT:
      return "float32";
    case ::onnx::TensorProto::DOUBLE:
      return "float64";
    case ::onnx::TensorProto::FLOAT16:
      return "float16";
    default:
      c.error("stash_type " + std::to_string(onnx_type) + " is not supported (float, double or float16)");
  }
}

std::vector<int64_t> axes_from(const ConvertContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    c.error("axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank));
  std::vector<int64_t> axes;
  for (int64_t d = axis < 0 ? axis + rank : axis; d < rank; ++d) axes.push_back(d);
  return axes;
}

// X / sqrt(mean(X^2 over the axes from `axis` on) + epsilon) * scale, computed in stash_type.
Expr rms_normalization(ConvertContext& c) {
  c.check_attrs({"axis", "epsilon", "stash_type"});
  const auto& x = c.input_type(0);
  if (!x.dtype.is_float()) c.error("X must be a float tensor, got " + x.dtype.str());
  const std::string stash = float_type_name(c, c.attr_int("stash_type", ::onnx::TensorProto::FLOAT));
  const runtime::DataType stash_dtype = runtime::DataType::parse(stash);
  const std::vector<int64_t> axes = axes_from(c, c.attr_int("axis", -1), static_cast<int64_t>(x.ndim()));
  Expr xs = cast_to(c, c.input(0), x.dtype, stash);
  Expr mean_square = c.call("reduce_mean", {c.call("mul", {xs, xs})}, {{"axes", axes}, {"keepdims", int64_t{1}}});
  Expr rms = c.call("sqrt", {c.call("add", {mean_square, scalar_constant(c.attr_float("epsilon", 1e-5f), stash_dtype)})});
  Expr normalized = cast_to(c, c.call("div", {xs, rms}), stash_dtype, x.dtype.str());
  return c.call("mul", {normalized, c.input(1)});
}

// X / ||X||_p along `axis`, 0 where the norm is 0.
Expr lp_normalization(ConvertContext& c) {
  c.check_attrs({"axis", "p"});
  const auto& x = c.input_type(0);
  if (!x.dtype.is_float()) c.error("the input must be a float tensor, got " + x.dtype.str());
  const int64_t p = c.attr_int("p", 2), rank = static_cast<int64_t>(x.ndim());
  if (p != 1 && p != 2) c.error("p must be 1 or 2, got " + std::to_string(p));
  int64_t axis = c.attr_int("axis", -1);
  if (axis < -rank || axis >= rank)
    c.error("axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  Expr norm = c.call(p == 1 ? "reduce_l1" : "reduce_l2", {c.input(0)},
                     {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}});
  Expr zero = scalar_constant(0, x.dtype);
  return c.call("where", {c.call("equal", {norm, zero}), zero, c.call("div", {c.input(0), norm})});
}

// Each group of num_groups channels normalized over its channels and positions, in stash_type,
// then scaled and shifted: per channel from opset 21, per group in opset 18.
Expr group_normalization(ConvertContext& c) {
  c.check_attrs({"epsilon", "num_groups", "stash_type"});
  const auto& x = c.input_type(0);
  if (!x.dtype.is_float()) c.error("X must be a float tensor, got " + x.dtype.str());
  if (x.ndim() < 2) c.error("X must be [N, C, ...], got rank " + std::to_string(x.ndim()));
  const int64_t groups = c.attr_int("num_groups"), channels = x.shape[1];
  if (groups < 1 || channels % groups != 0)
    c.error("num_groups " + std::to_string(groups) + " must divide the " + std::to_string(channels) + " channels");
  const bool per_channel = c.opset() >= 21;
  const int64_t params = per_channel ? channels : groups;
  for (size_t i : {size_t{1}, size_t{2}}) {
    const auto& t = c.input_type(i);
    if (t.shape != std::vector<int64_t>{params})
      c.error(std::string(i == 1 ? "scale" : "bias") + " must be [" + std::to_string(params) + "] (one per " +
              (per_channel ? "channel" : "group") + " at opset " + std::to_string(c.opset()) + "), got " +
              runtime::shape_str(t.shape));
  }
  const std::string stash = per_channel ? float_type_name(c, c.attr_int("stash_type", ::onnx::TensorProto::FLOAT))
                                        : x.dtype.str();
  const runtime::DataType stash_dtype = runtime::DataType::parse(stash);
  tensor_ir::Expr per_group = tensor_ir::Expr(channels / groups);  // of symbolic spatial sizes too
  for (size_t d = 2; d < x.ndim(); ++d) per_group = per_group * x.shape.dim(d);
  auto mean = [&](const Expr& e) {
    return c.call("reduce_mean", {e}, {{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t{1}}});
  };
  Expr grouped = c.call(
      "reshape", {cast_to(c, c.input(0), x.dtype, stash)},
      {{"shape", relay_ir::Shape({x.shape.dim(0), tensor_ir::Expr(groups), tensor_ir::arith::simplify(per_group)})}});
  Expr centered = c.call("sub", {grouped, mean(grouped)});
  Expr deviation = c.call(
      "sqrt", {c.call("add", {mean(c.call("mul", {centered, centered})),
                              scalar_constant(c.attr_float("epsilon", 1e-5f), stash_dtype)})});
  Expr normalized = c.call("div", {centered, deviation});
  // Scale and bias broadcast over a group's elements ([groups, 1]) or a channel's ([C, 1, ...]).
  std::vector<int64_t> param_shape{params, 1};
  if (per_channel) {
    normalized = c.call("reshape", {normalized}, {{"shape", x.shape}});
    param_shape.assign(x.ndim() - 1, 1);
    param_shape[0] = channels;
  }
  normalized = cast_to(c, normalized, stash_dtype, x.dtype.str());
  auto param = [&](size_t i) { return c.call("reshape", {c.input(i)}, {{"shape", param_shape}}); };
  Expr y = c.call("add", {c.call("mul", {normalized, param(1)}), param(2)});
  return per_channel ? y : c.call("reshape", {y}, {{"shape", x.shape}});
}

}  // namespace

void register_nn_norm_converters(ConverterTable& t) {
  t.add("BatchNormalization", [](ConvertContext& c) {
    c.check_attrs({"epsilon", "momentum", "spatial", "is_test", "consumed_inputs", "training_mode"});
    if (c.opset() < 7 && c.has_attr("is_test") && c.attr_int("is_test", 0) == 0)
      c.error("is_test=0 (training) is not supported; training mode comes with opset 14's training_mode=1");
    if (c.attr_int("spatial", 1) != 1) c.error("spatial=0 (statistics per activation) is not supported");
    std::vector<Expr> args{c.input(0), c.input(1), c.input(2), c.input(3), c.input(4)};
    double epsilon = c.attr_float("epsilon", 1e-5f);
    if (c.attr_int("training_mode", 0) != 0) {
      // Batch statistics; the outputs are y and the updated running mean and variance.
      Expr r = c.call("batch_norm_train", args,
                      {{"epsilon", epsilon}, {"momentum", double(c.attr_float("momentum", 0.9f))}});
      std::vector<Expr> outs;
      for (int i = 0; i < c.node().output_size() && i < 3; ++i) outs.push_back(relay_ir::tuple_get(r, i));
      return outs;
    }
    for (int i = 1; i < c.node().output_size(); ++i)
      if (wants_output(c, i))
        c.error("the running or saved statistics outputs exist only in training mode (opset 14's training_mode=1)");
    return std::vector<Expr>{c.call("batch_norm", args, {{"epsilon", epsilon}})};
  });
  t.add("InstanceNormalization", nn::one([](ConvertContext& c) {
          c.check_attrs({"epsilon"});
          return c.call("instance_norm", {c.input(0), c.input(1), c.input(2)},
                        {{"epsilon", double(c.attr_float("epsilon", 1e-5f))}});
        }));
  t.add("LayerNormalization", [](ConvertContext& c) {
    c.check_attrs({"axis", "epsilon", "stash_type"});
    std::vector<Expr> args{c.input(0), c.input(1)};
    if (c.has_input(2)) args.push_back(c.input(2));
    Expr r = c.call("layer_norm", args,
                    {{"axis", c.attr_int("axis", -1)},
                     {"epsilon", double(c.attr_float("epsilon", 1e-5f))},
                     {"stat_dtype", float_type_name(c, c.attr_int("stash_type", ::onnx::TensorProto::FLOAT))}});
    std::vector<Expr> outs;
    for (int i = 0; i < c.node().output_size(); ++i) outs.push_back(relay_ir::tuple_get(r, i));
    return outs;
  });
  t.add("LRN", nn::one([](ConvertContext& c) {
          c.check_attrs({"alpha", "beta", "bias", "size"});
          return c.call("lrn", {c.input(0)},
                        {{"size", c.attr_int("size")},
                         {"alpha", double(c.attr_float("alpha", 1e-4f))},
                         {"beta", double(c.attr_float("beta", 0.75f))},
                         {"bias", double(c.attr_float("bias", 1.0f))}});
        }));
  t.add("RMSNormalization", nn::one(rms_normalization));
  t.add("LpNormalization", nn::one(lp_normalization));
  t.add("GroupNormalization", nn::one(group_normalization));
  t.add("MeanVarianceNormalization", nn::one([](ConvertContext& c) {
          c.check_attrs({"axes"});
          return c.call("mean_variance_normalization", {c.input(0)}, {{"axes", c.attr_ints("axes", {0, 2, 3})}});
        }));
}

}  // namespace tessera::frontend::onnx
