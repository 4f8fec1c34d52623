// Converters of ONNX signal-processing, recurrent, sampling and linear-algebra operators. The
// signal and recurrent groups register from their own files (ops_extra_*.cc); GridSample,
// RoiAlign and Det map onto one graph op each.
#include "frontend/onnx/ops_extra.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

std::vector<Expr> grid_sample(ConvertContext& c) {
  c.check_attrs({"align_corners", "mode", "padding_mode"});
  int64_t align = c.attr_int("align_corners", 0);
  if (align != 0 && align != 1) c.error("align_corners must be 0 or 1, got " + std::to_string(align));
  // Opset 20 names the modes by kind (linear, cubic), whatever the number of spatial dimensions.
  std::string mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (c.opset() >= 20 && (mode == "linear" || mode == "cubic")) {
    if (c.input_type(0).ndim() != 4)
      c.error("mode '" + mode + "' over " + std::to_string(c.input_type(0).ndim() - 2) +
              " spatial dimensions is not supported (2: bilinear, bicubic)");
    mode = mode == "linear" ? "bilinear" : "bicubic";
  }
  Attrs a{{"mode", mode},
          {"padding_mode", c.attr_string("padding_mode", "zeros")},
          {"align_corners", align}};
  return {c.call("grid_sample", {c.input(0), c.input(1)}, a)};
}

std::vector<Expr> roi_align(ConvertContext& c) {
  c.check_attrs(
      {"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"});
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel; opset 16
  // added it with half_pixel as the default.
  std::string coords =
      c.opset() < 16 ? "output_half_pixel" : c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (c.opset() < 16 && c.has_attr("coordinate_transformation_mode"))
    c.error("coordinate_transformation_mode needs opset 16");
  Attrs a{{"mode", c.attr_string("mode", "avg")},
          {"output_height", c.attr_int("output_height", 1)},
          {"output_width", c.attr_int("output_width", 1)},
          {"sampling_ratio", c.attr_int("sampling_ratio", 0)},
          {"spatial_scale", static_cast<double>(c.attr_float("spatial_scale", 1.0f))},
          {"coordinate_transformation_mode", coords}};
  return {c.call("roi_align", {c.input(0), c.input(1), c.input(2)}, a)};
}

}  // namespace

void register_extra_converters(ConverterTable& t) {
  register_extra_signal_converters(t);
  register_extra_rnn_converters(t);
  t.add("GridSample", grid_sample);
  t.add("RoiAlign", roi_align);
  t.add("Det", [](ConvertContext& c) {
    c.check_attrs({});
    return std::vector<Expr>{c.call("det", {c.input(0)})};
  });
}

}  // namespace tessera::frontend::onnx
