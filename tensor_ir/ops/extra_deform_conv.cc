// Deformable convolution (ONNX DeformConv, torchvision's deform_conv2d): each kernel tap reads the
// input at its regular position moved by a learned offset, interpolated bilinearly (taps outside
// the input read zero), scaled by an optional mask. Two stages: the sampled columns
// [N, C, kH * kW, Ho, Wo], then their grouped contraction with the weights.
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/extra.h"

namespace tessera::tensor_ir::ops {

namespace {

void check_shape(const Tensor& t, const std::vector<int64_t>& want, const char* name) {
  if (t->dims() != want)
    fail("deform_conv: ", name, " must have shape ", runtime::shape_str(want), ", got ", runtime::shape_str(t->dims()));
}

}  // namespace

Tensor deform_conv(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& bias, const Tensor& mask,
                   const DeformConvParams& p) {
  const DataType dt = x.dtype();
  if (!dt.is_float()) fail("deform_conv: X must be float16, float32 or float64, got ", dt.str());
  const auto xs = x->dims(), ws = w->dims();
  if (xs.size() != 4 || ws.size() != 4) fail("deform_conv: X and W must be 4-D (2-D images)");
  const int64_t n = xs[0], channels = xs[1], height = xs[2], width = xs[3];
  const int64_t out_channels = ws[0], kh = ws[2], kw = ws[3], taps = kh * kw;
  if (p.groups < 1 || p.offset_groups < 1 || channels % p.groups || out_channels % p.groups ||
      channels % p.offset_groups || ws[1] != channels / p.groups)
    fail("deform_conv: W ", runtime::shape_str(ws), " does not fit ", channels, " input channels in ", p.groups,
         " groups (and ", p.offset_groups, " offset groups)");
  const int64_t oh = (height + p.pads[0] + p.pads[2] - ((kh - 1) * p.dilations[0] + 1)) / p.strides[0] + 1;
  const int64_t ow = (width + p.pads[1] + p.pads[3] - ((kw - 1) * p.dilations[1] + 1)) / p.strides[1] + 1;
  if (oh < 1 || ow < 1) fail("deform_conv: the kernel is larger than the padded input");
  check_shape(offset, {n, p.offset_groups * taps * 2, oh, ow}, "offset");
  check_shape(mask, {n, p.offset_groups * taps, oh, ow}, "mask");
  check_shape(bias, {out_channels}, "B");
  const DataType acc = dt == runtime::kFloat64 ? dt : runtime::kFloat32;
  auto c = [&](double v) { return make_const(acc, v); };
  const int64_t per_offset_group = channels / p.offset_groups;

  Tensor columns = compute(
      {Expr(n), Expr(channels), Expr(taps), Expr(oh), Expr(ow)},
      [&](const std::vector<Var>& i) {
        const Expr b = i[0], ch = i[1], k = i[2], y = i[3], xo = i[4];
        const Expr tap = floordiv(ch, Expr(per_offset_group)) * Expr(taps) + k;
        const Expr base_y = y * Expr(p.strides[0]) - Expr(p.pads[0]) + floordiv(k, Expr(kw)) * Expr(p.dilations[0]);
        const Expr base_x = xo * Expr(p.strides[1]) - Expr(p.pads[1]) + floormod(k, Expr(kw)) * Expr(p.dilations[1]);
        const Expr sy = cast(acc, base_y) + cast(acc, offset(b, tap * Expr(2), y, xo));
        const Expr sx = cast(acc, base_x) + cast(acc, offset(b, tap * Expr(2) + Expr(1), y, xo));
        // Far-off positions are clamped first: their floor must be a valid index value.
        const Expr fy = call(Intrinsic::floor, {max(min(sy, c(static_cast<double>(height + 1))), c(-2))});
        const Expr fx = call(Intrinsic::floor, {max(min(sx, c(static_cast<double>(width + 1))), c(-2))});
        const Expr y0 = cast(kIndexType, fy), x0 = cast(kIndexType, fx);
        const Expr ly = sy - fy, lx = sx - fx;
        auto tap_value = [&](const Expr& yi, const Expr& xi, const Expr& weight) {
          const Expr inside =
              logical_and(logical_and(yi >= Expr(0), yi < Expr(height)), logical_and(xi >= Expr(0), xi < Expr(width)));
          const Expr at =
              cast(acc, x(b, ch, min(max(yi, Expr(0)), Expr(height - 1)), min(max(xi, Expr(0)), Expr(width - 1))));
          return select(inside, weight * at, c(0));
        };
        const Expr value =
            tap_value(y0, x0, (c(1) - ly) * (c(1) - lx)) + tap_value(y0, x0 + Expr(1), (c(1) - ly) * lx) +
            tap_value(y0 + Expr(1), x0, ly * (c(1) - lx)) + tap_value(y0 + Expr(1), x0 + Expr(1), ly * lx);
        return value * cast(acc, mask(b, tap, y, xo));
      },
      "deform_conv_columns", "deform_conv");

  const int64_t group_in = channels / p.groups, group_out = out_channels / p.groups;
  const std::vector<Expr> out_shape{Expr(n), Expr(out_channels), Expr(oh), Expr(ow)};
  Tensor contracted = compute(
      out_shape,
      [&](const std::vector<Var>& o) {
        IterVar ci = reduce_axis(Range(Expr(0), Expr(group_in)), "ci");
        IterVar k = reduce_axis(Range(Expr(0), Expr(taps)), "k");
        const Expr ch = floordiv(o[1], Expr(group_out)) * Expr(group_in) + ci;
        const Expr term =
            cast(acc, w(o[1], ci, floordiv(k, Expr(kw)), floormod(k, Expr(kw)))) * columns(o[0], ch, k, o[2], o[3]);
        return sum(term, {ci, k});
      },
      "deform_conv_sum", "deform_conv");
  return compute(
      out_shape,
      [&](const std::vector<Var>& o) { return cast(dt, contracted(o[0], o[1], o[2], o[3]) + cast(acc, bias(o[1]))); },
      "deform_conv", "deform_conv");
}

}  // namespace tessera::tensor_ir::ops
