// Gradients of convolutions. conv and conv_transpose are each other's adjoints in the data:
// the data gradient of a convolution is a transposed convolution of the cotangent with the same
// weight and geometry (output_padding recovering the positions the strides skipped at the end;
// with strides, computed phase by phase as stride-1 convolutions instead), and that of a
// transposed convolution a convolution. Both weight gradients correlate an input with a
// cotangent (conv_weight_grad); bias gradients sum over batch and space.
#include <algorithm>
#include <numeric>

#include "relay_ir/ops/nn_grad.h"
#include "runtime/error.h"

namespace tessera::relay_ir::nn_grad {

namespace {

std::vector<int64_t> spatial(const std::vector<int64_t>& shape) { return {shape.begin() + 2, shape.end()}; }

// The data gradient of conv(data, w) for stride 1: a transposed convolution of `g` with `w`.
Expr transposed_data_grad(const Expr& g, const Expr& w, const std::vector<int64_t>& data, const tensor_ir::ops::ConvGeometry& geo) {
  const auto& gs = tensor_of(g).shape;
  const auto& ws = tensor_of(w).shape;
  size_t rank = data.size() - 2;
  std::vector<int64_t> output_padding(rank);
  for (size_t d = 0; d < rank; ++d)
    output_padding[d] = data[2 + d] - ((gs[2 + d] - 1) * geo.strides[d] + (ws[2 + d] - 1) * geo.dilations[d] + 1 - geo.pads[d] -
                                        geo.pads[d + rank]);
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
Expr phased_data_grad(const Expr& g, const Expr& w, const std::vector<int64_t>& data, const tensor_ir::ops::ConvGeometry& geo) {
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
    return call("unslice", {rows_inside}, {{"shape", data}, {"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", geo.strides}});
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
Expr conv_data_grad(const Expr& g, const Expr& w, const std::vector<int64_t>& data, const tensor_ir::ops::ConvGeometry& geo) {
  bool strided = std::any_of(geo.strides.begin(), geo.strides.end(), [](int64_t s) { return s > 1; });
  return strided ? phased_data_grad(g, w, data, geo) : transposed_data_grad(g, w, data, geo);
}

Expr weight_grad(const Expr& x, const Expr& dy, const std::vector<int64_t>& kernel, const tensor_ir::ops::ConvGeometry& geo) {
  Attrs a = conv_attrs(geo);
  a.set("kernel", kernel);
  return call("conv_weight_grad", {x, dy}, a);
}

Expr bias_grad(const Expr& g) { return reduce_sum(g, all_but_channels(tensor_of(g).ndim()), false); }

}  // namespace

void register_conv(OpRegistry& r) {
  r.set_gradient("conv", [](const Expr& c, const Expr& g) {
    const Expr &x = arg(c, 0), &w = arg(c, 1);
    const Attrs& attrs = as_call(c).attrs;
    if (attrs.has("packed_channels") && attrs.get_int("packed_channels") != 0)
      fail("a convolution reading a packed weight cannot be differentiated (differentiate before AlterOpLayout)");
    const auto& xs = tensor_of(x).shape;
    auto geo = conv_geometry(attrs, xs.size() - 2, false);
    std::vector<Expr> grads{conv_data_grad(g, w, xs, geo), weight_grad(x, g, spatial(tensor_of(w).shape), geo)};
    if (as_call(c).args.size() > 2) grads.push_back(bias_grad(g));
    return grads;
  });
  // y = conv_transpose(x, w) is the data gradient of a convolution with weight w: its adjoint in
  // x is that convolution, and w's gradient correlates the cotangent (the convolution's input)
  // with x (its output's cotangent).
  r.set_gradient("conv_transpose", [](const Expr& c, const Expr& g) {
    const Expr &x = arg(c, 0), &w = arg(c, 1);
    const auto& xs = tensor_of(x).shape;
    auto geo = conv_geometry(as_call(c).attrs, xs.size() - 2, true);
    Expr dx = call("conv", {g, w}, conv_attrs(geo));
    if (tensor_of(dx).shape != xs)
      fail("output_padding ", runtime::shape_str(geo.output_padding), " reaches past the last stride; the gradient supports ",
           "output_padding < strides");
    std::vector<Expr> grads{dx, weight_grad(g, x, spatial(tensor_of(w).shape), geo)};
    if (as_call(c).args.size() > 2) grads.push_back(bias_grad(g));
    return grads;
  });
  // conv_weight_grad(x, dy) is bilinear: <G, dW> = <conv(x, G), dy> = <x, conv_data_grad(dy, G)>.
  r.set_gradient("conv_weight_grad", [](const Expr& c, const Expr& g) {
    const Expr &x = arg(c, 0), &dy = arg(c, 1);
    const auto& xs = tensor_of(x).shape;
    auto geo = conv_geometry(as_call(c).attrs, xs.size() - 2, false);
    return std::vector<Expr>{conv_data_grad(dy, g, xs, geo), call("conv", {x, g}, conv_attrs(geo))};
  });
}

}  // namespace tessera::relay_ir::nn_grad
