// Converters of ONNX signal-processing, recurrent, sampling and linear-algebra operators. The
// signal and recurrent groups register from their own files (ops_extra_*.cc); GridSample,
// RoiAlign, DeformConv and Det map onto one graph op each, AffineGrid onto a matrix product.
#include "frontend/onnx/ops_extra.h"

#include "frontend/onnx/ops_math.h"
#include "frontend/onnx/ops_nn.h"
#include "runtime/element.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;

namespace {

std::vector<Expr> grid_sample(ConvertContext& c) {
  c.check_attrs({"align_corners", "mode", "padding_mode"});
  int64_t align = c.attr_int("align_corners", 0);
  if (align != 0 && align != 1) c.error("align_corners must be 0 or 1, got " + std::to_string(align));
  // Opset 20 names the modes by kind (linear, cubic), whatever the number of spatial dimensions
  // (the graph op's bilinear is trilinear for volumes).
  std::string mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (c.opset() >= 20 && (mode == "linear" || mode == "cubic")) mode = mode == "linear" ? "bilinear" : "bicubic";
  Attrs a{{"mode", mode},
          {"padding_mode", c.attr_string("padding_mode", "zeros")},
          {"align_corners", align}};
  return {c.call("grid_sample", {c.input(0), c.input(1)}, a)};
}

// AffineGrid (20): the sampling grid of GridSample for affine matrices theta [N, 2, 3] (or
// [N, 3, 4]): each output position's normalized coordinates (x first), with a 1 appended, times
// theta transposed: one matrix product with a constant grid of positions.
std::vector<Expr> affine_grid(ConvertContext& c) {
  c.check_attrs({"align_corners"});
  const auto& theta = c.input_type(0);
  const std::vector<int64_t> size = c.constant_ints(1, "size");
  const bool align = c.attr_int("align_corners", 0) != 0;
  const size_t rank = size.size() - 2;
  if ((rank != 2 && rank != 3) || theta.shape != std::vector<int64_t>{size[0], int64_t(rank), int64_t(rank + 1)})
    c.error("theta must be [N, 2, 3] with size [N, C, H, W], or [N, 3, 4] with size [N, C, D, H, W]; got " +
            runtime::shape_str(theta.shape) + " and size " + runtime::shape_str(size));
  if (!theta.dtype.is_float()) c.error("theta must be a float tensor, got " + theta.dtype.str());
  // Positions in row-major order of (D,) H, W; coordinates x (along W), y, (z), then 1.
  std::vector<int64_t> dims(size.begin() + 2, size.end());
  int64_t positions = 1;
  for (int64_t d : dims) positions *= d;
  runtime::NDArray base = runtime::NDArray::empty({positions, int64_t(rank + 1)}, theta.dtype);
  auto coordinate = [&](int64_t i, int64_t n) {
    if (align) return n == 1 ? 0.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
  };
  for (int64_t p = 0; p < positions; ++p) {
    int64_t rest = p;
    for (size_t d = rank; d-- > 0;) {  // dims[d] is the innermost first: x is the last dimension
      const int64_t i = rest % dims[d];
      rest /= dims[d];
      runtime::store_element(base, p * int64_t(rank + 1) + int64_t(rank - 1 - d), coordinate(i, dims[d]));
    }
    runtime::store_element(base, p * int64_t(rank + 1) + int64_t(rank), 1.0);
  }
  Expr theta_t = c.call("transpose", {c.input(0)}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Expr grid = c.call("matmul", {relay_ir::constant(base), theta_t});
  std::vector<int64_t> shape{size[0]};
  shape.insert(shape.end(), dims.begin(), dims.end());
  shape.push_back(int64_t(rank));
  return {c.call("reshape", {grid}, {{"shape", shape}})};
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

// DeformConv (opset 19) of images; an omitted bias is zeros, an omitted mask ones.
std::vector<Expr> deform_conv(ConvertContext& c) {
  c.check_attrs({"dilations", "group", "kernel_shape", "offset_group", "pads", "strides"});
  const auto& x = c.input_type(0);
  const auto& w = c.input_type(1);
  if (x.ndim() != 4 || w.ndim() != 4)
    c.error("only 2-D images are supported (X [N, C, H, W]), got X " + runtime::shape_str(x.shape));
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape", {}) != std::vector<int64_t>{w.shape[2], w.shape[3]})
    c.error("kernel_shape differs from W's " + runtime::shape_str(w.shape));
  const auto& offset = c.input_type(2);
  Expr bias = c.has_input(3) ? c.input(3) : relay_ir::constant(filled({w.shape[0]}, x.dtype, 0));
  Expr mask = c.has_input(4)
                  ? c.input(4)
                  : relay_ir::constant(
                        filled({offset.shape[0], offset.shape[1] / 2, offset.shape[2], offset.shape[3]}, x.dtype, 1));
  Attrs a{{"strides", nn::spatial_attr(c, "strides", 2, 1)},
          {"dilations", nn::spatial_attr(c, "dilations", 2, 1)},
          {"pads", c.attr_ints("pads", std::vector<int64_t>(4, 0))},
          {"groups", c.attr_int("group", 1)},
          {"offset_groups", c.attr_int("offset_group", 1)}};
  return {c.call("deform_conv", {c.input(0), c.input(1), c.input(2), bias, mask}, a)};
}

}  // namespace

void register_extra_converters(ConverterTable& t) {
  register_extra_signal_converters(t);
  register_extra_rnn_converters(t);
  t.add("GridSample", grid_sample);
  t.add("AffineGrid", affine_grid, {1});
  t.add("RoiAlign", roi_align);
  t.add("DeformConv", deform_conv);
  t.add("Det", [](ConvertContext& c) {
    c.check_attrs({});
    return std::vector<Expr>{c.call("det", {c.input(0)})};
  });
}

}  // namespace tessera::frontend::onnx
