// Convolutions of any spatial rank: conv, conv_integer, conv_transpose. Attributes strides,
// dilations (one per spatial dimension; empty: all 1), pads (begins then ends; empty: none),
// groups, and for conv_transpose output_padding (empty: none). conv's packed_channels (0: the
// weight as it is) says its weight comes packed by conv_pack_weight or conv_winograd_weight, as
// AlterOpLayout rewrites convolutions with constant weights; a fourth input (after the bias) is
// the blocked packing beside a Winograd one, for the sizes at which the Winograd form does not
// pay (the driver lowers a kernel per form, chosen at each call). conv_weight_grad, the weight gradient
// of a convolution, only gradients build.
// Gradients: conv and conv_transpose are each other's adjoints in the data: the data gradient of
// a convolution is a transposed convolution of the cotangent with the same weight and geometry
// (output_padding recovering the positions the strides skipped at the end; with strides,
// computed phase by phase as stride-1 convolutions instead), and that of a transposed
// convolution a convolution. Both weight gradients correlate an input with a cotangent
// (conv_weight_grad); bias gradients sum over batch and space.
#include <algorithm>
#include <numeric>

#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_grad.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

ops::ConvGeometry nn::conv_geometry(const Attrs& a, size_t rank, bool transposed) {
  auto or_fill = [&](const char* name, size_t n, int64_t fill) {
    std::vector<int64_t> v = a.get_ints(name);
    return v.empty() ? std::vector<int64_t>(n, fill) : v;
  };
  ops::ConvGeometry g;
  g.strides = or_fill("strides", rank, 1);
  g.dilations = or_fill("dilations", rank, 1);
  g.pads = or_fill("pads", 2 * rank, 0);
  g.groups = a.get_int("groups");
  if (transposed) g.output_padding = or_fill("output_padding", rank, 0);
  return g;
}

namespace {

using nn::conv_geometry;

size_t spatial_rank(const TensorTypeNode& data) {
  if (data.ndim() < 3)
    fail("data must be [N, C, spatial...] with at least one spatial dimension, got ", runtime::shape_str(data.shape));
  return data.ndim() - 2;
}

void check_bias(const std::vector<Type>& args, const TensorTypeNode& data, int64_t channels) {
  if (args.size() < 3) return;
  const auto& b = tensor_arg(args, 2, "bias");
  if (b.dtype != data.dtype) fail("bias dtype ", b.dtype.str(), " differs from data's ", data.dtype.str());
  if (b.shape != std::vector<int64_t>{channels})
    fail("bias must have shape [", channels, "] (one per output channel), got ", runtime::shape_str(b.shape));
}

// The shape of the weight a packed one holds ([packed_channels, C / groups, kernel...]), after
// checking it is the packing this convolution reads (conv_pack_weight or conv_winograd_weight).
std::vector<int64_t> unpacked_weight(const TensorTypeNode& d, const std::vector<tensor_ir::Expr>& data,
                                     const TensorTypeNode& w, int64_t channels, const ops::ConvGeometry& g,
                                     const Attrs& attrs) {
  DataType want = ops::packed_weight_dtype(d.dtype);
  if (w.dtype != want)
    fail("a packed weight (packed_channels=", channels, ") must be ", want.str(), ", got ", w.dtype.str());
  return ops::conv_unpacked_weight_shape(data, w.shape, channels, g, d.dtype, registers_of(attrs, "a packed conv"));
}

Type conv_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = tensor_arg(args, 0, "data");
  const auto& w = tensor_arg(args, 1, "weight");
  require_float(d, "data");
  ops::ConvGeometry g = conv_geometry(attrs, spatial_rank(d), false);
  int64_t channels = attrs.get_int("packed_channels");
  if (channels < 0) fail("packed_channels must not be negative, got ", channels);
  if (channels == 0 && w.dtype != d.dtype) fail("weight dtype ", w.dtype.str(), " differs from data's ", d.dtype.str());
  Shape out = keep_batch(d.shape, [&](const std::vector<tensor_ir::Expr>& data) {
    std::vector<int64_t> ws = channels ? unpacked_weight(d, data, w, channels, g, attrs) : w.shape.ints();
    if (args.size() == 4) {
      const auto& direct = tensor_arg(args, 3, "direct weight");
      if (channels == 0 || w.ndim() != 4 || direct.ndim() == 4 ||
          unpacked_weight(d, data, direct, channels, g, attrs) != ws)
        fail("a direct weight ", direct.dtype.str(), direct.shape.str(), " goes beside a Winograd packing of the same ",
             "weight, got ", w.dtype.str(), w.shape.str());
    }
    return ops::conv_shape(data, ws, g);
  });
  check_bias(args, d, out[1]);
  return tensor_type(out, d.dtype);
}

// Whether a conv_nhwc reads its data as [N, C, H, W] (data_layout "NCHW") rather than [N, H, W, C].
bool nchw_data(const Attrs& attrs) {
  const std::string& layout = attrs.get_str("data_layout");
  if (layout != "NHWC" && layout != "NCHW") fail("data_layout must be NHWC or NCHW, got ", layout);
  return layout == "NCHW";
}

Type conv_nhwc_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = tensor_arg(args, 0, "data");
  const auto& w = tensor_arg(args, 1, "weight");
  require_float(d, "data");
  if (w.dtype != d.dtype) fail("weight dtype ", w.dtype.str(), " differs from data's ", d.dtype.str());
  Shape out(ops::conv_nhwc_shape(d.shape.dims(), w.shape, conv_geometry(attrs, 2, false), nchw_data(attrs)));
  check_bias(args, d, out[3]);
  return tensor_type(out, d.dtype);
}

Type conv_pack_weight_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& w = tensor_arg(args, 0, "weight");
  require_float(w, "weight");
  return tensor_type(ops::conv_packed_weight_shape(w.shape, attrs.get_int("block")), ops::packed_weight_dtype(w.dtype));
}

Type conv_winograd_weight_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& w = tensor_arg(args, 0, "weight");
  require_float(w, "weight");
  return tensor_type(ops::conv_winograd_weight_shape(w.shape, registers_of(attrs, "conv_winograd_weight")),
                     ops::packed_weight_dtype(w.dtype));
}

// The output shape of conv_integer and qlinear_conv, whose batch and spatial sizes may be symbolic.
Shape quantized_conv_shape(const TensorTypeNode& d, const TensorTypeNode& w, const Attrs& attrs) {
  const ops::ConvGeometry g = conv_geometry(attrs, spatial_rank(d), false);
  return keep_batch(d.shape,
                    [&](const std::vector<tensor_ir::Expr>& data) { return ops::conv_shape(data, w.shape.ints(), g); });
}

Type conv_integer_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = tensor_arg(args, 0, "data");
  const auto& w = tensor_arg(args, 1, "weight");
  nn::require_dtype(d, "data", {"int8", "uint8"});
  nn::require_dtype(w, "weight", {"int8", "uint8"});
  const Shape out = quantized_conv_shape(d, w, attrs);
  const auto& dz = tensor_arg(args, 2, "data zero point");
  const auto& wz = tensor_arg(args, 3, "weight zero point");
  if (dz.dtype != d.dtype || dz.numel() != 1)
    fail("the data zero point must be one ", d.dtype.str(), " value, got ", to_string(args[2]));
  if (wz.dtype != w.dtype || wz.ndim() > 1 || (wz.numel() != 1 && wz.numel() != out[1]))
    fail("the weight zero point must be one ", w.dtype.str(), " value or one per output channel (", out[1], "), got ",
         to_string(args[3]));
  return tensor_type(out, runtime::kInt32);
}

Type qlinear_conv_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = tensor_arg(args, 0, "x");
  const auto& w = tensor_arg(args, 3, "w");
  nn::require_dtype(d, "x", {"int8", "uint8"});
  nn::require_dtype(w, "w", {"int8", "uint8"});
  const Shape out = quantized_conv_shape(d, w, attrs);
  nn::check_quant_param(args, 1, "x_scale", runtime::kFloat32, 0);
  nn::check_quant_param(args, 2, "x_zero_point", d.dtype, 0);
  nn::check_quant_param(args, 4, "w_scale", runtime::kFloat32, out[1]);
  nn::check_quant_param(args, 5, "w_zero_point", w.dtype, out[1]);
  nn::check_quant_param(args, 6, "y_scale", runtime::kFloat32, 0);
  const auto& yz = tensor_arg(args, 7, "y_zero_point");
  nn::require_dtype(yz, "y_zero_point", {"int8", "uint8"});
  nn::check_quant_param(args, 7, "y_zero_point", yz.dtype, 0);
  if (args.size() > 8) {
    const auto& b = tensor_arg(args, 8, "bias");
    if (b.dtype != runtime::kInt32 || b.shape != std::vector<int64_t>{out[1]})
      fail("bias must be int32 of shape [", out[1], "], got ", to_string(args[8]));
  }
  return tensor_type(out, yz.dtype);
}

// A transposed convolution of symbolic sizes reads its input, which must not be empty (of an empty
// one, stride * (in - 1) would leave the output smaller than the window).
std::vector<OpDef::NonEmptyDim> input_not_empty(const CallNode& call) {
  const Shape& in = tensor_of(call.args.at(0)).shape;
  std::vector<OpDef::NonEmptyDim> dims;
  for (size_t d = 2; d < in.size(); ++d)
    if (!in.is_static(d))
      dims.push_back(
          {in.dim(d), tensor_ir::Expr(1),
           "needs an input of at least 1 in spatial dimension " + std::to_string(d - 2) + ": its size there"});
  return dims;
}

Type conv_transpose_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = tensor_arg(args, 0, "data");
  const auto& w = tensor_arg(args, 1, "weight");
  require_float(d, "data");
  if (w.dtype != d.dtype) fail("weight dtype ", w.dtype.str(), " differs from data's ", d.dtype.str());
  const ops::ConvGeometry g = conv_geometry(attrs, spatial_rank(d), true);
  Shape out = keep_batch(d.shape, [&](const std::vector<tensor_ir::Expr>& data) {
    return ops::conv_transpose_shape(data, w.shape.ints(), g);
  });
  check_bias(args, d, out[1]);
  return tensor_type(out, d.dtype);
}

Type conv_weight_grad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "x");
  require_float(x, "x");
  const auto& dy = tensor_arg(args, 1, "dy");
  if (dy.dtype != x.dtype) fail("dy dtype ", dy.dtype.str(), " differs from x's ", x.dtype.str());
  if (x.ndim() < 3) fail("x must be [N, C, spatial...], got ", runtime::shape_str(x.shape));
  std::vector<int64_t> kernel = attrs.get_ints("kernel");
  auto w = ops::conv_weight_grad_shape(x.shape, dy.shape, kernel, conv_geometry(attrs, x.ndim() - 2, false));
  return tensor_type(w, x.dtype);
}

std::vector<AttrSpec> conv_attrs(bool transposed) {
  std::vector<AttrSpec> a{{"strides", std::vector<int64_t>{}},
                          {"pads", std::vector<int64_t>{}},
                          {"dilations", std::vector<int64_t>{}},
                          {"groups", int64_t(1)}};
  if (transposed) a.push_back({"output_padding", std::vector<int64_t>{}});
  return a;
}

}  // namespace

namespace nn {
namespace {

std::vector<int64_t> spatial(const std::vector<int64_t>& shape) { return {shape.begin() + 2, shape.end()}; }

// The data gradient of conv(data, w) for stride 1: a transposed convolution of `g` with `w`.
Expr transposed_data_grad(const Expr& g, const Expr& w, const std::vector<int64_t>& data,
                          const tensor_ir::ops::ConvGeometry& geo) {
  const auto& gs = tensor_of(g).shape;
  const auto& ws = tensor_of(w).shape;
  size_t rank = data.size() - 2;
  std::vector<int64_t> output_padding(rank);
  for (size_t d = 0; d < rank; ++d)
    output_padding[d] = data[2 + d] - ((gs[2 + d] - 1) * geo.strides[d] + (ws[2 + d] - 1) * geo.dilations[d] + 1 -
                                       geo.pads[d] - geo.pads[d + rank]);
  Attrs a = conv_attrs(geo);
  a.set("output_padding", output_padding);
  return call("conv_transpose", {g, w}, a);
}

// The taps of one dimension of a strided convolution that reach the input positions i with
// (i + pad) % stride == phase: k = first + u * step for u < count (none when count is 0), at
// output o = (i + pad - phase) / stride - offset - u * dilation', dilation' = dilation / gcd.
struct PhaseTaps {
  int64_t first = 0, count = 0, step = 1, offset = 0, dilation = 1;
};

PhaseTaps phase_taps(int64_t phase, int64_t kernel, int64_t stride, int64_t dilation) {
  PhaseTaps t;
  int64_t g = std::gcd(stride, dilation);
  t.step = stride / g;
  t.dilation = dilation / g;
  for (int64_t k = 0; k < kernel; ++k)
    if ((k * dilation - phase) % stride == 0) {
      if (t.count++ == 0) t.first = k, t.offset = (k * dilation - phase) / stride;
    }
  return t;
}

// The data gradient of a strided convolution, phase by phase: the positions i with
// (i + pad) % stride == phase (per dimension) get the cotangent only through the taps of that
// phase, a stride-1 convolution of the (padded) cotangent with those taps flipped (a strided,
// reversed slice of the weight with its channel axes swapped). The phases are then interleaved
// (concat, reshape, transpose) and the padding cropped; a single phase with taps (a 1x1 kernel)
// is spread out by unslice instead. The transposed convolution would multiply the zeros it
// inserts between cotangents too: stride^rank times the work.
Expr phased_data_grad(const Expr& g, const Expr& w, const std::vector<int64_t>& data,
                      const tensor_ir::ops::ConvGeometry& geo) {
  const auto& gt = tensor_of(g);
  const auto& ws = tensor_of(w).shape;
  size_t rank = data.size() - 2;
  int64_t groups = geo.groups, mg = ws[0] / groups, cg = ws[1];
  // The weight of a convolution of the cotangent: [C, M / groups, kernel...].
  std::vector<int64_t> grouped{groups, mg, cg}, perm{0, 2, 1};
  for (size_t d = 0; d < rank; ++d) grouped.push_back(ws[2 + d]), perm.push_back(static_cast<int64_t>(3 + d));
  std::vector<int64_t> swapped{cg * groups, mg};
  swapped.insert(swapped.end(), ws.begin() + 2, ws.end());
  Expr wt = reshape(call("transpose", {reshape(w, grouped)}, {{"perm", perm}}), swapped);

  std::vector<int64_t> rows(rank), phases_shape{data[0], data[1]}, axes;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    rows[d] = (data[2 + d] + geo.pads[d] + geo.strides[d] - 1) / geo.strides[d];
    phases_shape.push_back(geo.strides[d]);
    axes.push_back(static_cast<int64_t>(2 + d));
    count *= geo.strides[d];
  }
  std::vector<int64_t> part_shape{data[0], data[1]};
  part_shape.insert(part_shape.end(), rows.begin(), rows.end());
  std::vector<Expr> parts(count);  // undefined for phases no tap reaches (stride and dilation share a factor)
  std::vector<std::vector<int64_t>> phase_of(count, std::vector<int64_t>(rank));
  int64_t live = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    std::vector<PhaseTaps> taps(rank);
    bool none = false;
    int64_t rest = flat;  // the phase of each dimension, row-major
    for (size_t d = rank; d-- > 0;) {
      phase_of[flat][d] = rest % geo.strides[d];
      taps[d] = phase_taps(phase_of[flat][d], ws[2 + d], geo.strides[d], geo.dilations[d]);
      rest /= geo.strides[d];
      none |= taps[d].count == 0;
    }
    if (none) continue;
    std::vector<int64_t> starts, ends, steps, dilations, pads(2 * rank);
    for (size_t d = 0; d < rank; ++d) {
      const PhaseTaps& t = taps[d];
      starts.push_back(t.first + (t.count - 1) * t.step);
      ends.push_back(t.first >= t.step ? t.first - t.step : -ws[2 + d] - 1);
      steps.push_back(-t.step);
      dilations.push_back(t.dilation);
      pads[d] = t.offset + (t.count - 1) * t.dilation;
      pads[rank + d] = std::max<int64_t>(0, rows[d] - t.offset - gt.shape[2 + d]);
    }
    Expr flipped = call("slice", {wt}, {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}});
    Expr part = call("conv", {g, flipped}, {{"pads", pads}, {"dilations", dilations}, {"groups", groups}});
    if (tensor_of(part).shape != part_shape)
      part = call("slice", {part}, {{"starts", std::vector<int64_t>(rank, 0)}, {"ends", rows}, {"axes", axes}});
    parts[flat] = part;
    ++live;
  }
  if (live == 1) {  // one phase (a 1x1 kernel): its rows go to every stride-th position, zeros elsewhere
    int64_t flat = std::find_if(parts.begin(), parts.end(), [](const Expr& e) { return bool(e); }) - parts.begin();
    std::vector<int64_t> lo, hi, starts, ends;
    for (size_t d = 0; d < rank; ++d) {
      int64_t s = geo.strides[d], before = geo.pads[d] - phase_of[flat][d];  // rows j land at j * s - before
      lo.push_back(before > 0 ? (before + s - 1) / s : 0);
      hi.push_back((data[2 + d] + before + s - 1) / s);
      starts.push_back(lo.back() * s - before);
      ends.push_back((hi.back() - 1) * s - before + 1);
    }
    Expr rows_inside = call("slice", {parts[flat]}, {{"starts", lo}, {"ends", hi}, {"axes", axes}});
    return call("unslice", {rows_inside},
                {{"shape", data}, {"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", geo.strides}});
  }
  for (auto& part : parts) {
    if (!part) part = call("broadcast_to", {scalar_like(0, g)}, {{"shape", part_shape}});
    part = call("expand_dims", {part}, {{"axes", std::vector<int64_t>{2}}});
  }
  Expr stacked = reshape(parts.size() == 1 ? parts[0] : call("concat", parts, {{"axis", int64_t(2)}}), [&] {
    std::vector<int64_t> s = phases_shape;
    s.insert(s.end(), rows.begin(), rows.end());
    return s;
  }());
  std::vector<int64_t> order{0, 1}, interleaved{data[0], data[1]}, starts, ends;
  for (size_t d = 0; d < rank; ++d) {
    order.push_back(static_cast<int64_t>(2 + rank + d));
    order.push_back(static_cast<int64_t>(2 + d));
    interleaved.push_back(rows[d] * geo.strides[d]);
    starts.push_back(geo.pads[d]);
    ends.push_back(geo.pads[d] + data[2 + d]);
  }
  Expr full = reshape(call("transpose", {stacked}, {{"perm", order}}), interleaved);
  return call("slice", {full}, {{"starts", starts}, {"ends", ends}, {"axes", axes}});
}

// The data gradient of conv(data, w) for the cotangent g of its result.
Expr conv_data_grad(const Expr& g, const Expr& w, const std::vector<int64_t>& data,
                    const tensor_ir::ops::ConvGeometry& geo) {
  bool strided = std::any_of(geo.strides.begin(), geo.strides.end(), [](int64_t s) { return s > 1; });
  return strided ? phased_data_grad(g, w, data, geo) : transposed_data_grad(g, w, data, geo);
}

Expr weight_grad(const Expr& x, const Expr& dy, const std::vector<int64_t>& kernel,
                 const tensor_ir::ops::ConvGeometry& geo) {
  Attrs a = conv_attrs(geo);
  a.set("kernel", kernel);
  return call("conv_weight_grad", {x, dy}, a);
}

Expr bias_grad(const Expr& g) { return reduce_sum(g, all_but_channels(tensor_of(g).ndim()), false); }

std::vector<Expr> conv_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &w = arg(c, 1);
  const Attrs& attrs = as_call(c).attrs;
  if (attrs.has("packed_channels") && attrs.get_int("packed_channels") != 0)
    fail("a convolution reading a packed weight cannot be differentiated (differentiate before AlterOpLayout)");
  const auto& xs = tensor_of(x).shape;
  auto geo = conv_geometry(attrs, xs.size() - 2, false);
  std::vector<Expr> grads{conv_data_grad(g, w, xs, geo), weight_grad(x, g, spatial(tensor_of(w).shape), geo)};
  if (as_call(c).args.size() > 2) grads.push_back(bias_grad(g));
  return grads;
}

// y = conv_transpose(x, w) is the data gradient of a convolution with weight w: its adjoint in
// x is that convolution, and w's gradient correlates the cotangent (the convolution's input)
// with x (its output's cotangent).
std::vector<Expr> conv_transpose_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &w = arg(c, 1);
  const auto& xs = tensor_of(x).shape;
  auto geo = conv_geometry(as_call(c).attrs, xs.size() - 2, true);
  Expr dx = call("conv", {g, w}, conv_attrs(geo));
  if (tensor_of(dx).shape != xs)
    fail("output_padding ", runtime::shape_str(geo.output_padding),
         " reaches past the last stride; the gradient supports ", "output_padding < strides");
  std::vector<Expr> grads{dx, weight_grad(g, x, spatial(tensor_of(w).shape), geo)};
  if (as_call(c).args.size() > 2) grads.push_back(bias_grad(g));
  return grads;
}

// conv_weight_grad(x, dy) is bilinear: <G, dW> = <conv(x, G), dy> = <x, conv_data_grad(dy, G)>.
std::vector<Expr> conv_weight_grad_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &dy = arg(c, 1);
  const auto& xs = tensor_of(x).shape;
  auto geo = conv_geometry(as_call(c).attrs, xs.size() - 2, false);
  return std::vector<Expr>{conv_data_grad(dy, g, xs, geo), call("conv", {x, g}, conv_attrs(geo))};
}

}  // namespace
}  // namespace nn

void register_nn_conv_ops(OpRegistry& r) {
  std::vector<AttrSpec> packable = conv_attrs(false);
  packable.push_back({"packed_channels", int64_t(0)});
  packable = nn::with_register_attrs(packable);
  r.add({"conv",
         "convolution of data [N, C, spatial...] with weight [M, C / groups, kernel...] (or its packing, for "
         "packed_channels=M), "
         "optional bias [M], optional blocked packing beside a Winograd one",
         2, 4, packable, conv_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::conv(in[0], in[1], nn::optional_input(in, 2), conv_geometry(a, in[0].ndim() - 2, false),
                            registers_of(a, "conv"), a.get_int("packed_channels"), nn::optional_input(in, 3));
         }),
         "conv_epilogue", nn::conv_gradient, /*is_view=*/false, nn::window_fits});
  std::vector<AttrSpec> channels_last = conv_attrs(false);
  channels_last.push_back({"data_layout", std::string("NHWC")});
  r.add({"conv_nhwc",
         "2-D convolution of data [N, H, W, C] (or [N, C, H, W] with data_layout=\"NCHW\") with weight [KH, KW, C / "
         "groups, M], "
         "optional bias [M], to [N, OH, OW, M]",
         2, 3, channels_last, conv_nhwc_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::conv_nhwc(in[0], in[1], nn::optional_input(in, 2), conv_geometry(a, 2, false), nchw_data(a));
         }),
         "conv_nhwc_epilogue", /*gradient=*/nullptr, /*is_view=*/false, nn::window_fits_nhwc});
  r.add({"conv_pack_weight",
         "a conv weight [M, C / groups, kernel...] as [M / block, C / groups, kernel..., block] (zeros past M), "
         "the layout conv's blocked kernel reads",
         1,
         1,
         {{"block", int64_t(0), true}},
         conv_pack_weight_rel,
         OpPattern::Injective,
         single_output([](const In& in, const Attrs& a) { return ops::conv_pack_weight(in[0], a.get_int("block")); }),
         "conv_pack"});
  r.add({"conv_winograd_weight",
         "a 3x3 conv weight [M, C, 3, 3] transformed for Winograd's F(4x4, 3x3) (U = G g G^T) as the "
         "matrix-product panels [36, M / nr, C, nr] its products read",
         1, 1, nn::with_register_attrs({}), conv_winograd_weight_rel, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::conv_winograd_weight(in[0], registers_of(a, "conv_winograd_weight"));
         }),
         "conv_pack"});
  r.add({"conv_integer",
         "int32 convolution of (data - data_zero) and (weight - weight_zero) for int8/uint8; padding reads data_zero",
         4, 4, conv_attrs(false), conv_integer_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::conv_integer(in[0], in[1], in[2], in[3], conv_geometry(a, in[0].ndim() - 2, false),
                                    registers_of(a, "conv_integer"));
         }),
         "conv_epilogue", /*gradient=*/nullptr, /*is_view=*/false, nn::window_fits});
  r.add({"qlinear_conv",
         "quantized convolution (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, optional "
         "int32 bias): "
         "int32 sums requantized to y_zero_point's type, rounding half to even and saturating",
         8, 9, conv_attrs(false), qlinear_conv_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::qlinear_conv(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], nn::optional_input(in, 8),
                                    conv_geometry(a, in[0].ndim() - 2, false), registers_of(a, "qlinear_conv"));
         }),
         "conv_epilogue", /*gradient=*/nullptr, /*is_view=*/false, nn::window_fits});
  r.add({"conv_transpose",
         "transposed convolution of data [N, C, spatial...] with weight [C, M / groups, kernel...], optional bias [M]",
         2, 3, conv_attrs(true), conv_transpose_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::conv_transpose(in[0], in[1], nn::optional_input(in, 2), conv_geometry(a, in[0].ndim() - 2, true),
                                      registers_of(a, "conv_transpose"));
         }),
         "conv_epilogue", nn::conv_transpose_gradient, /*is_view=*/false, input_not_empty});
  r.add({"conv_weight_grad",
         "the gradient of conv(x, w) with respect to w for the cotangent dy of its result: x [N, C, spatial...] "
         "correlated with dy "
         "[N, M, out...] into [M, C / groups, kernel...]",
         2,
         2,
         {{"kernel", std::vector<int64_t>{}, true},
          {"strides", std::vector<int64_t>{}},
          {"pads", std::vector<int64_t>{}},
          {"dilations", std::vector<int64_t>{}},
          {"groups", int64_t(1)}},
         conv_weight_grad_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::conv_weight_grad(in[0], in[1], a.get_ints("kernel"), conv_geometry(a, in[0].ndim() - 2, false),
                                        registers_of(a, "conv_weight_grad"));
         }),
         "conv_weight_grad",
         nn::conv_weight_grad_gradient});
}

}  // namespace tessera::relay_ir
