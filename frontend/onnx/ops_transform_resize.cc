// Converters of ONNX Resize (opsets 10, 11, 13, 18, 19), Upsample (7, 9) and TopK. K must be a
// constant (or a bound input); sizes may be computed from symbolic dimensions (an image resized
// to the size of another). Scales are constants, or (Resize 11 on, Upsample 9) the data's, read as
// the kernel runs, with the output sizes a step computed from them (frontend/onnx/sizes_from_data.h);
// so is a roi the data gives.
#include <algorithm>
#include <cmath>

#include "frontend/onnx/ops_transform.h"
#include "frontend/onnx/sizes_from_data.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform_resize.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;
using Exprs = std::vector<Expr>;

namespace {

std::vector<double> constant_floats(const ConvertContext& c, size_t input, const std::string& what) {
  runtime::NDArray a = c.constant_input(input, what);
  std::vector<double> out;
  for (int64_t i = 0; i < a.numel(); ++i) out.push_back(element_as_double(a, i));
  return out;
}

// Output sizes from scales, as ONNX's reference: floor(input size * scale); of a symbolic
// dimension, the dimension itself where the scale is 1 (a dynamic batch), else an expression of
// it (tensor_ir::ops::scaled_size).
relay_ir::Shape sizes_from_scales(const ConvertContext& c, const relay_ir::Shape& in,
                                  const std::vector<double>& scales) {
  if (scales.size() != in.size())
    c.error(std::to_string(scales.size()) + " scales for an input of rank " + std::to_string(in.size()));
  std::vector<tensor_ir::Expr> sizes;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d]))
      c.error("scale " + std::to_string(scales[d]) + " is not a positive number");
    if (scales[d] == 1) {
      sizes.push_back(in.dim(d));
    } else if (!in.is_static(d) && tensor_ir::ops::scaled_size(in.dim(d), scales[d]).defined()) {
      sizes.push_back(tensor_ir::ops::scaled_size(in.dim(d), scales[d]));
    } else {
      sizes.emplace_back(static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scales[d])));
    }
  }
  return relay_ir::Shape(sizes);
}

// A resize whose scales (input `scales`) the data gives, read as its kernel runs: the output sizes
// are the input past the node's own, which the step before it computed from them; `axes` lists the
// axes the scales are of (all where empty), and the others keep the input's sizes (a constant
// number of channels for the convolution after it).
Expr resize_by_run_time_scales(const ConvertContext& c, size_t scales, std::vector<int64_t> axes, Attrs attrs,
                               const Expr& roi = Expr()) {
  std::vector<tensor_ir::Expr> sizes =
      c.dim_ints(static_cast<size_t>(sizes_from_scales_input(c.node())), "the output sizes computed from the scales");
  const relay_ir::Shape& in = c.input_type(0).shape;
  const auto rank = static_cast<int64_t>(in.size());
  if (static_cast<int64_t>(sizes.size()) != rank)
    c.error(std::to_string(sizes.size()) + " output sizes for an input of rank " + std::to_string(rank));
  // Leading scales the model gives as ones: the kernel reads the others, of the axes after them.
  Expr scales_read = c.input(scales);
  if (const int64_t ones = c.attr_int(kUnitScales, 0); ones > 0 && ones < rank) {
    for (int64_t d = ones; d < rank; ++d) axes.push_back(d);
    scales_read = c.call("slice", {scales_read},
                         {{"starts", std::vector<int64_t>{ones}},
                          {"ends", std::vector<int64_t>{rank}},
                          {"axes", std::vector<int64_t>{0}}});
  }
  for (size_t d = 0; d < sizes.size() && !axes.empty(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) sizes[d] = in.dim(d);
  attrs.set("sizes", relay_ir::Shape(sizes));
  attrs.set("scales_input_axes", axes);
  if (roi.defined()) return c.call("resize", {c.input(0), scales_read, roi}, attrs);
  return c.call("resize", {c.input(0), scales_read}, attrs);
}

// Resize 10 and Upsample: asymmetric coordinates, nearest rounds down. `scales` empty: the data's.
Expr resize_v10(const ConvertContext& c, const std::vector<double>& scales) {
  std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear") c.error("mode '" + mode + "' is not supported (nearest, linear)");
  const auto& in = c.input_type(0).shape;
  Attrs attrs{{"mode", mode},
              {"coordinate_transformation_mode", std::string("asymmetric")},
              {"nearest_mode", std::string("floor")}};
  if (scales.empty()) return resize_by_run_time_scales(c, 1, {}, attrs);
  attrs.set("sizes", sizes_from_scales(c, in, scales));
  attrs.set("scales", scales);
  return c.call("resize", {c.input(0)}, attrs);
}

// Whether the node's last input holds its output sizes, which a step computed from its scales.
bool sizes_computed_from_scales(const ConvertContext& c) { return c.attr_int(kSizesFromScales, 0) != 0; }

// Opset 18's roi of the axes `axes` lists (all where empty) as every axis' start, then every axis'
// end: the axes left out from 0 to 1.
std::vector<double> roi_of_every_axis(const ConvertContext& c, const std::vector<double>& roi,
                                      const std::vector<int64_t>& axes, int64_t rank) {
  if (axes.empty()) return roi;
  const size_t n = axes.size();
  if (roi.size() != 2 * n) c.error("roi must have two entries per axis of axes (" + std::to_string(n) + ")");
  std::vector<double> full(2 * rank, 0.0);
  std::fill(full.begin() + rank, full.end(), 1.0);
  for (size_t i = 0; i < n; ++i) full[axes[i]] = roi[i], full[axes[i] + rank] = roi[n + i];
  return full;
}

Exprs convert_resize(ConvertContext& c) {
  if (c.opset() < 11) {
    c.check_attrs({"mode"});
    return {resize_v10(c, constant_floats(c, 1, "scales"))};
  }
  // Opset 18 added antialias, axes and keep_aspect_ratio_policy.
  if (c.opset() >= 18)
    c.check_attrs({"mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                   "nearest_mode", "axes", "keep_aspect_ratio_policy", "antialias", kSizesFromScales, kUnitScales});
  else
    c.check_attrs({"mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                   "nearest_mode", kSizesFromScales, kUnitScales});
  const auto& in = c.input_type(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::string coordinates = c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coordinates == "tf_half_pixel_for_nn" && c.opset() >= 13) c.error("tf_half_pixel_for_nn was removed in opset 13");
  // Opset 18: scales, sizes and roi may name a subset of the axes; the others keep their size.
  std::vector<int64_t> axes = normalized_axes(c, c.attr_ints("axes", {}), rank);
  std::vector<double> roi;
  Expr roi_read;  // a roi the data gives, read as the kernel runs
  if (coordinates == "tf_crop_and_resize") {
    if (!c.has_input(1)) c.error("tf_crop_and_resize needs the roi input");
    if (c.try_constant_input(1)) roi = constant_floats(c, 1, "roi");
    else roi_read = c.input(1);
  }
  Attrs attrs{{"mode", c.attr_string("mode", "nearest")},
              {"coordinate_transformation_mode", coordinates},
              {"nearest_mode", c.attr_string("nearest_mode", "round_prefer_floor")},
              {"cubic_coeff_a", static_cast<double>(c.attr_float("cubic_coeff_a", -0.75f))},
              {"exclude_outside", c.attr_int("exclude_outside", 0)},
              {"antialias", c.attr_int("antialias", 0)},
              {"extrapolation_value", static_cast<double>(c.attr_float("extrapolation_value", 0))}};
  if (!roi.empty()) attrs.set("roi", roi_of_every_axis(c, roi, axes, rank));
  if (roi_read.defined()) {
    std::vector<int64_t> roi_axes = axes;
    if (roi_axes.empty())
      for (int64_t d = 0; d < rank; ++d) roi_axes.push_back(d);
    attrs.set("roi_input_axes", roi_axes);
  }
  // Antialiasing's taps depend on the scale: it takes constant scales, bound per value.
  if (sizes_computed_from_scales(c) && !c.try_constant_input(2) && c.attr_int("antialias", 0) == 0)
    return {resize_by_run_time_scales(c, 2, axes, attrs, roi_read)};
  // An empty scales/sizes tensor stands for an absent one (opset 11 requires scales as input).
  std::vector<double> scales;
  std::vector<tensor_ir::Expr> sizes;  // of symbolic dimensions, computed from the input shapes
  if (c.has_input(2)) scales = constant_floats(c, 2, "scales");
  if (c.has_input(3)) sizes = c.dim_ints(3, "sizes");
  if (scales.empty() == sizes.empty()) c.error("exactly one of scales and sizes must be given");
  if (!axes.empty()) {
    const size_t n = axes.size();
    if ((!scales.empty() && scales.size() != n) || (!sizes.empty() && sizes.size() != n))
      c.error("scales and sizes must have one entry per axis of axes (" + std::to_string(n) + ")");
    // Axes left out keep their size: scale 1.
    std::vector<double> full_scales(rank, 1.0);
    std::vector<tensor_ir::Expr> full_sizes = sizes.empty() ? std::vector<tensor_ir::Expr>{} : in.dims();
    for (size_t i = 0; i < n; ++i) {
      if (!scales.empty()) full_scales[axes[i]] = scales[i];
      if (!sizes.empty()) full_sizes[axes[i]] = sizes[i];
    }
    if (!scales.empty()) scales = full_scales;
    if (!sizes.empty()) sizes = full_sizes;
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    c.error("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, got '" + policy + "'");
  relay_ir::Shape out;  // symbolic where a scale of 1 keeps a symbolic dimension (a dynamic batch)
  if (sizes.empty()) {
    out = sizes_from_scales(c, in, scales);
  } else if (sizes.size() != in.size()) {
    c.error(std::to_string(sizes.size()) + " sizes for an input of rank " + std::to_string(in.size()));
  } else if (policy != "stretch") {
    // One scale for every resized axis: the smallest (not_larger) or largest of sizes / input.
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (int64_t d : axes) {
      const int64_t* size = tensor_ir::as_const_int(sizes[d]);
      if (!size || !in.is_static(d))
        c.error("keep_aspect_ratio_policy " + policy + " needs constant sizes, got " + relay_ir::Shape(sizes).str() +
                " for an input of shape " + in.str());
      const double s = static_cast<double>(*size) / static_cast<double>(in[d]);
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    scales.assign(rank, 1.0);
    for (int64_t d : axes) {
      scales[d] = scale;
      sizes[d] = tensor_ir::Expr(static_cast<int64_t>(scale * static_cast<double>(in[d]) + 0.5));  // halves round up
    }
  }
  if (!sizes.empty()) out = relay_ir::Shape(sizes);
  attrs.set("sizes", out);
  attrs.set("scales", scales);
  if (roi_read.defined()) return {c.call("resize", {c.input(0), roi_read}, attrs)};
  return {c.call("resize", {c.input(0)}, attrs)};
}

Exprs convert_upsample(ConvertContext& c) {
  if (c.opset() < 9) {
    c.check_attrs({"mode", "scales"});
    if (!c.has_attr("scales")) c.error("missing scales attribute");
    std::vector<double> scales;
    for (float s : c.attr_floats("scales", {})) scales.push_back(s);
    return {resize_v10(c, scales)};
  }
  c.check_attrs({"mode", kSizesFromScales, kUnitScales});
  const bool run_time = sizes_computed_from_scales(c) && !c.try_constant_input(1);
  return {resize_v10(c, run_time ? std::vector<double>{} : constant_floats(c, 1, "scales"))};
}

Exprs convert_topk(ConvertContext& c) {
  int64_t k;
  if (c.opset() < 10) {
    c.check_attrs({"axis", "k"});
    k = c.attr_int("k");
  } else {
    c.check_attrs({"axis", "largest", "sorted"});
    std::vector<int64_t> ks = c.constant_ints(1, "k");
    if (ks.size() != 1) c.error("k must hold one value, got " + std::to_string(ks.size()));
    k = ks[0];
  }
  // Results always come sorted, which is also a valid answer for sorted=0.
  Expr t =
      c.call("topk", {c.input(0)}, {{"k", k}, {"axis", c.attr_int("axis", -1)}, {"largest", c.attr_int("largest", 1)}});
  return {relay_ir::tuple_get(t, 0), relay_ir::tuple_get(t, 1)};
}

}  // namespace

void register_transform_resize_converters(ConverterTable& t) {
  // Scales from the data are read as the kernel runs, after a step computed the sizes from them
  // (the input past the operator's own).
  t.add("Resize", convert_resize, {1, 2, 3, 4}, {1, 2});
  t.add("Upsample", convert_upsample, {1, 2}, {1});
  t.add("TopK", convert_topk, {1});
}

}  // namespace tessera::frontend::onnx
