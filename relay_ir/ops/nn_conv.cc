// Convolutions of any spatial rank: conv, conv_integer, conv_transpose. Attributes strides,
// dilations (one per spatial dimension; empty: all 1), pads (begins then ends; empty: none),
// groups, and for conv_transpose output_padding (empty: none). conv's packed_channels (0: the
// weight as it is) says its weight comes packed by conv_pack_weight or conv_winograd_weight, as
// AlterOpLayout rewrites convolutions with constant weights.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"

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
  if (data.ndim() < 3) fail("data must be [N, C, spatial...] with at least one spatial dimension, got ", runtime::shape_str(data.shape));
  return data.ndim() - 2;
}

void check_bias(const std::vector<Type>& args, const TensorTypeNode& data, int64_t channels) {
  if (args.size() < 3) return;
  const auto& b = nn::arg(args, 2, "bias");
  if (b.dtype != data.dtype) fail("bias dtype ", b.dtype.str(), " differs from data's ", data.dtype.str());
  if (b.shape != std::vector<int64_t>{channels})
    fail("bias must have shape [", channels, "] (one per output channel), got ", runtime::shape_str(b.shape));
}

// The shape of the weight a packed one holds ([packed_channels, C / groups, kernel...]), after
// checking it is the packing this convolution reads (conv_pack_weight or conv_winograd_weight).
std::vector<int64_t> unpacked_weight(const TensorTypeNode& d, const TensorTypeNode& w, int64_t channels, const ops::ConvGeometry& g,
                                     const Attrs& attrs) {
  DataType want = ops::packed_weight_dtype(d.dtype);
  if (w.dtype != want) fail("a packed weight (packed_channels=", channels, ") must be ", want.str(), ", got ", w.dtype.str());
  return ops::conv_unpacked_weight_shape(d.shape, w.shape, channels, g, d.dtype, registers_of(attrs, "a packed conv"));
}

Type conv_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = nn::arg(args, 0, "data");
  const auto& w = nn::arg(args, 1, "weight");
  nn::require_float(d, "data");
  ops::ConvGeometry g = conv_geometry(attrs, spatial_rank(d), false);
  int64_t channels = attrs.get_int("packed_channels");
  if (channels < 0) fail("packed_channels must not be negative, got ", channels);
  if (channels == 0 && w.dtype != d.dtype) fail("weight dtype ", w.dtype.str(), " differs from data's ", d.dtype.str());
  auto out = ops::conv_shape(d.shape, channels ? unpacked_weight(d, w, channels, g, attrs) : w.shape, g);
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
  const auto& d = nn::arg(args, 0, "data");
  const auto& w = nn::arg(args, 1, "weight");
  nn::require_float(d, "data");
  if (w.dtype != d.dtype) fail("weight dtype ", w.dtype.str(), " differs from data's ", d.dtype.str());
  auto out = ops::conv_nhwc_shape(d.shape, w.shape, conv_geometry(attrs, 2, false), nchw_data(attrs));
  check_bias(args, d, out[3]);
  return tensor_type(out, d.dtype);
}

Type conv_pack_weight_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& w = nn::arg(args, 0, "weight");
  nn::require_float(w, "weight");
  return tensor_type(ops::conv_packed_weight_shape(w.shape, attrs.get_int("block")), ops::packed_weight_dtype(w.dtype));
}

Type conv_winograd_weight_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& w = nn::arg(args, 0, "weight");
  nn::require_float(w, "weight");
  return tensor_type(ops::conv_winograd_weight_shape(w.shape, registers_of(attrs, "conv_winograd_weight")),
                     ops::packed_weight_dtype(w.dtype));
}

Type conv_integer_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = nn::arg(args, 0, "data");
  const auto& w = nn::arg(args, 1, "weight");
  nn::require_dtype(d, "data", {"int8", "uint8"});
  nn::require_dtype(w, "weight", {"int8", "uint8"});
  auto out = ops::conv_shape(d.shape, w.shape, conv_geometry(attrs, spatial_rank(d), false));
  const auto& dz = nn::arg(args, 2, "data zero point");
  const auto& wz = nn::arg(args, 3, "weight zero point");
  if (dz.dtype != d.dtype || dz.numel() != 1) fail("the data zero point must be one ", d.dtype.str(), " value, got ", to_string(args[2]));
  if (wz.dtype != w.dtype || wz.ndim() > 1 || (wz.numel() != 1 && wz.numel() != out[1]))
    fail("the weight zero point must be one ", w.dtype.str(), " value or one per output channel (", out[1], "), got ", to_string(args[3]));
  return tensor_type(out, runtime::kInt32);
}

Type qlinear_conv_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = nn::arg(args, 0, "x");
  const auto& w = nn::arg(args, 3, "w");
  nn::require_dtype(d, "x", {"int8", "uint8"});
  nn::require_dtype(w, "w", {"int8", "uint8"});
  auto out = ops::conv_shape(d.shape, w.shape, conv_geometry(attrs, spatial_rank(d), false));
  nn::check_quant_param(args, 1, "x_scale", runtime::kFloat32, 0);
  nn::check_quant_param(args, 2, "x_zero_point", d.dtype, 0);
  nn::check_quant_param(args, 4, "w_scale", runtime::kFloat32, out[1]);
  nn::check_quant_param(args, 5, "w_zero_point", w.dtype, out[1]);
  nn::check_quant_param(args, 6, "y_scale", runtime::kFloat32, 0);
  const auto& yz = nn::arg(args, 7, "y_zero_point");
  nn::require_dtype(yz, "y_zero_point", {"int8", "uint8"});
  nn::check_quant_param(args, 7, "y_zero_point", yz.dtype, 0);
  if (args.size() > 8) {
    const auto& b = nn::arg(args, 8, "bias");
    if (b.dtype != runtime::kInt32 || b.shape != std::vector<int64_t>{out[1]})
      fail("bias must be int32 of shape [", out[1], "], got ", to_string(args[8]));
  }
  return tensor_type(out, yz.dtype);
}

Type conv_transpose_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& d = nn::arg(args, 0, "data");
  const auto& w = nn::arg(args, 1, "weight");
  nn::require_float(d, "data");
  if (w.dtype != d.dtype) fail("weight dtype ", w.dtype.str(), " differs from data's ", d.dtype.str());
  auto out = ops::conv_transpose_shape(d.shape, w.shape, conv_geometry(attrs, spatial_rank(d), true));
  check_bias(args, d, out[1]);
  return tensor_type(out, d.dtype);
}

std::vector<AttrSpec> conv_attrs(bool transposed) {
  std::vector<AttrSpec> a{{"strides", std::vector<int64_t>{}}, {"pads", std::vector<int64_t>{}},
                          {"dilations", std::vector<int64_t>{}}, {"groups", int64_t(1)}};
  if (transposed) a.push_back({"output_padding", std::vector<int64_t>{}});
  return a;
}

}  // namespace

void register_nn_conv_ops(OpRegistry& r) {
  std::vector<AttrSpec> packable = conv_attrs(false);
  packable.push_back({"packed_channels", int64_t(0)});
  packable = nn::with_register_attrs(packable);
  r.add({"conv", "convolution of data [N, C, spatial...] with weight [M, C / groups, kernel...] (or its packing, for packed_channels=M), "
         "optional bias [M]", 2, 3, packable, conv_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::conv(in[0], in[1], nn::optional_input(in, 2), conv_geometry(a, in[0].ndim() - 2, false),
                            registers_of(a, "conv"), a.get_int("packed_channels"));
         })});
  std::vector<AttrSpec> channels_last = conv_attrs(false);
  channels_last.push_back({"data_layout", std::string("NHWC")});
  r.add({"conv_nhwc", "2-D convolution of data [N, H, W, C] (or [N, C, H, W] with data_layout=\"NCHW\") with weight [KH, KW, C / groups, M], "
         "optional bias [M], to [N, OH, OW, M]", 2, 3, channels_last, conv_nhwc_rel, OpPattern::OutEWiseFusable,
         single_output([](const In& in, const Attrs& a) {
           return ops::conv_nhwc(in[0], in[1], nn::optional_input(in, 2), conv_geometry(a, 2, false), nchw_data(a));
         })});
  r.add({"conv_pack_weight", "a conv weight [M, C / groups, kernel...] as [M / block, C / groups, kernel..., block] (zeros past M), "
         "the layout conv's blocked kernel reads", 1, 1, {{"block", int64_t(0), true}}, conv_pack_weight_rel, OpPattern::Injective,
         single_output([](const In& in, const Attrs& a) { return ops::conv_pack_weight(in[0], a.get_int("block")); })});
  r.add({"conv_winograd_weight", "a 3x3 conv weight [M, C, 3, 3] transformed for Winograd's F(4x4, 3x3) (U = G g G^T) as the "
         "matrix-product panels [36, M / nr, C, nr] its products read", 1, 1, nn::with_register_attrs({}), conv_winograd_weight_rel,
         OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::conv_winograd_weight(in[0], registers_of(a, "conv_winograd_weight"));
         })});
  r.add({"conv_integer", "int32 convolution of (data - data_zero) and (weight - weight_zero) for int8/uint8; padding reads data_zero", 4,
         4, conv_attrs(false), conv_integer_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::conv_integer(in[0], in[1], in[2], in[3], conv_geometry(a, in[0].ndim() - 2, false),
                                    registers_of(a, "conv_integer"));
         })});
  r.add({"qlinear_conv",
         "quantized convolution (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, optional int32 bias): "
         "int32 sums requantized to y_zero_point's type, rounding half to even and saturating",
         8, 9, conv_attrs(false), qlinear_conv_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::qlinear_conv(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], nn::optional_input(in, 8),
                                    conv_geometry(a, in[0].ndim() - 2, false), registers_of(a, "qlinear_conv"));
         })});
  r.add({"conv_transpose", "transposed convolution of data [N, C, spatial...] with weight [C, M / groups, kernel...], optional bias [M]",
         2, 3, conv_attrs(true), conv_transpose_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           return ops::conv_transpose(in[0], in[1], nn::optional_input(in, 2), conv_geometry(a, in[0].ndim() - 2, true),
                                      registers_of(a, "conv_transpose"));
         })});
}

}  // namespace tessera::relay_ir
