// 2-D convolutions in the channels-last layout: data [N, H, W, C] (or [N, C, H, W], read
// transposed), weight [KH, KW, C / groups, M], output [N, OH, OW, M]. The graph's ConvertLayout
// pass moves depthwise-separable networks here, where every kernel's threads can take whole
// rows of positions: each core then reads what it wrote itself (see relay_ir's convert_layout.cc).
// Stages: the padded input P[n, y, x, c] (tag "conv_nhwc_pad", zeros outside the input; none
// for unpadded NHWC data), the product R[n, oy, ox, m] (tag "depthwise_nhwc" for one input
// channel per group, else "conv_nhwc"), and the epilogue Y (tag "conv_nhwc_epilogue": the bias,
// the cast). The channels are innermost everywhere, so the template's vectors run along them.
#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_conv_core.h"
#include "tensor_ir/ops/nn_util.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

// [N, H, W, C] sizes of the data in either layout.
std::vector<Expr> nhwc_dims(const std::vector<Expr>& data, bool nchw_data) {
  if (data.size() != 4) fail("conv_nhwc: data must be 4-D, got ", shape_str(data));
  return nchw_data ? std::vector<Expr>{data[0], data[2], data[3], data[1]} : data;
}

}  // namespace

std::vector<Expr> conv_nhwc_shape(const std::vector<Expr>& data, const std::vector<int64_t>& weight,
                                  const ConvGeometry& g, bool nchw_data) {
  std::vector<Expr> d = nhwc_dims(data, nchw_data);
  if (weight.size() != 4) fail("conv_nhwc: weight must be [KH, KW, C / groups, M], got ", runtime::shape_str(weight));
  check_geometry("conv_nhwc", 2, g);
  const int64_t channels = constant_channels("conv_nhwc", d[3], weight[2] * g.groups, weight, data);
  if (channels % g.groups != 0 || weight[3] % g.groups != 0)
    fail("conv_nhwc: channels (", channels, " in, ", weight[3], " out) must be divisible by groups ", g.groups);
  if (weight[2] * g.groups != channels)
    fail("conv_nhwc: weight ", runtime::shape_str(weight), " expects ", weight[2] * g.groups, " input channels (",
         weight[2], " per group x ", g.groups, " groups), data has ", channels);
  std::vector<Expr> out{d[0]};
  for (size_t a = 0; a < 2; ++a) {
    const int64_t window = (weight[a] - 1) * g.dilations[a] + 1;
    // A symbolic size below the window gives an output size below 1, which the graph checks at
    // run time (window_fits).
    Expr span = arith::simplify(d[1 + a] + Expr(g.pads[a] + g.pads[a + 2] - window));
    if (const int64_t* fixed = as_const_int(span); fixed && *fixed < 0)
      fail("conv_nhwc: the kernel (", window, " with dilation) is larger than the padded input (", *fixed + window,
           ") in spatial dimension ", a);
    out.push_back(arith::simplify(floordiv(span, Expr(g.strides[a])) + Expr(1)));
  }
  out.push_back(Expr(weight[3]));
  return out;
}

Tensor conv_nhwc(const Tensor& data, const Tensor& weight, const Tensor& bias, const ConvGeometry& g, bool nchw_data) {
  if (data.dtype() != weight.dtype())
    fail("conv_nhwc: data and weight dtypes differ: ", data.dtype().str(), " vs ", weight.dtype().str());
  std::vector<Expr> d = nhwc_dims(data->shape, nchw_data);
  std::vector<int64_t> ws = weight->dims();
  std::vector<Expr> out = conv_nhwc_shape(data->shape, ws, g, nchw_data);
  DataType acc = accumulation_type(data.dtype());
  int64_t m = ws[3], per_group = ws[2], outs_per_group = m / g.groups;
  bool padded = nchw_data || acc != data.dtype();
  for (int64_t p : g.pads) padded = padded || p != 0;

  // P covers the rows and columns the outputs read, from -pad on.
  Tensor p = data;
  if (padded) {
    std::vector<Expr> shape{d[0]};
    for (size_t a = 0; a < 2; ++a)
      shape.push_back(
          arith::simplify((out[1 + a] - Expr(1)) * Expr(g.strides[a]) + Expr((ws[a] - 1) * g.dilations[a] + 1)));
    shape.push_back(d[3]);
    p = compute(
        shape,
        [&](const std::vector<Var>& v) {
          Expr y = v[1] - Expr(g.pads[0]), x = v[2] - Expr(g.pads[1]);
          Expr inside = logical_and(logical_and(y >= Expr(0), y < d[1]), logical_and(x >= Expr(0), x < d[2]));
          std::vector<Expr> idx = nchw_data ? std::vector<Expr>{v[0], v[3], y, x} : std::vector<Expr>{v[0], y, x, v[3]};
          return select(inside, read_as(data, idx, acc), make_zero(acc));  // lazy: nothing read outside
        },
        "conv_nhwc_pad", "conv_nhwc_pad", {"n", "y", "x", "c"});
  }

  IterVar ky = reduce_axis(Range(Expr(0), Expr(ws[0])), "ky"), kx = reduce_axis(Range(Expr(0), Expr(ws[1])), "kx");
  auto at = [&](const Var& oy, const Var& ox, const Expr& channel) -> std::vector<Expr> {
    return {oy * Expr(g.strides[0]) + Expr(ky) * Expr(g.dilations[0]),
            ox * Expr(g.strides[1]) + Expr(kx) * Expr(g.dilations[1]), channel};
  };
  const std::vector<Expr>& shape = out;
  std::vector<std::string> names{"n", "oy", "ox", "m"};
  Tensor r;
  if (per_group == 1) {
    r = compute(
        shape,
        [&](const std::vector<Var>& v) {
          std::vector<Expr> pos = at(v[1], v[2], floordiv(v[3], Expr(outs_per_group)));
          return sum(read_as(p, {v[0], pos[0], pos[1], pos[2]}, acc) *
                         read_as(weight, {Expr(ky), Expr(kx), Expr(0), v[3]}, acc),
                     {ky, kx});
        },
        "conv_nhwc_depthwise", "depthwise_nhwc", names);
  } else {
    IterVar kc = reduce_axis(Range(Expr(0), Expr(per_group)), "kc");
    r = compute(
        shape,
        [&](const std::vector<Var>& v) {
          std::vector<Expr> pos = at(v[1], v[2], floordiv(v[3], Expr(outs_per_group)) * Expr(per_group) + Expr(kc));
          return sum(read_as(p, {v[0], pos[0], pos[1], pos[2]}, acc) *
                         read_as(weight, {Expr(ky), Expr(kx), Expr(kc), v[3]}, acc),
                     {ky, kx, kc});
        },
        "conv_nhwc_product", "conv_nhwc", names);
  }
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        Expr y = r({v[0], v[1], v[2], v[3]});
        if (bias.defined()) y = y + read_as(bias, {v[3]}, acc);
        return cast(data.dtype(), y);
      },
      "conv_nhwc", "conv_nhwc_epilogue", names);
}

}  // namespace tessera::tensor_ir::ops
