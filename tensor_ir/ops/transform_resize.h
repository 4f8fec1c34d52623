// Compute definition of resize (ONNX Resize and Upsample): nearest, n-linear and n-cubic
// interpolation over any set of axes. Each output element maps back to a fractional input
// coordinate per axis (the coordinate transformation), then reads its neighbours along every
// resized axis, clamped at the edges, and weighs them. Coordinates are computed in float64 as
// ONNX's reference does; the weighted sum runs in float32 (float64 for float64 data).
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/ops/transform_shape.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeCoordinates {
  HalfPixel,
  HalfPixelSymmetric,  // opset 19: half_pixel, shifted to keep the center where the output size was rounded
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};
enum class ResizeNearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

ResizeMode parse_resize_mode(const std::string& name);
ResizeCoordinates parse_resize_coordinates(const std::string& name);
ResizeNearest parse_resize_nearest(const std::string& name);

struct ResizeParams {
  // Symbolic along axes the resize leaves as they are (scale 1, the input's dimension), along
  // symbolic input axes resized by a constant scale (floor(size * scale), an expression of the
  // size), and where the sizes are given at run time.
  std::vector<Expr> out_shape;
  Shape static_out_shape() const;  // throws naming a symbolic dimension
  // Per axis: the scale the coordinate transformation divides by (output / input size when
  // the sizes were given); 0 where that quotient is of symbolic sizes, computed at run time.
  std::vector<double> scales;
  std::vector<double> roi;  // tf_crop_and_resize: every axis' start, then every axis' end (fractions)
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::HalfPixel;
  ResizeNearest nearest = ResizeNearest::RoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;    // cubic: zero the weights of neighbours outside the input
  // Linear and cubic downsampling (scale < 1) with the kernel stretched by 1 / scale, so that every
  // input element within its reach counts (opset 18): antialias_offsets() taps per output.
  bool antialias = false;
  double extrapolation_value = 0;  // tf_crop_and_resize: value where the coordinate leaves the input
  // Where the scales are the resize's second input, read as it runs (the output sizes computed
  // from them before): per axis, the index of its scale in that input, or -1 where the axis keeps
  // its size (scale 1). Empty where the scales are known.
  std::vector<int64_t> run_time_scale;
  bool scale_at_run_time(size_t d) const { return !run_time_scale.empty() && run_time_scale[d] >= 0; }
  // tf_crop_and_resize where the roi is the resize's last input, read as it runs: per axis, the
  // index j of its start in that input (its end at j + the number of such axes), or -1 where
  // the axis keeps its roi of `roi` (0 to 1). Empty where the roi is known.
  std::vector<int64_t> run_time_roi;
  bool roi_at_run_time(size_t d) const { return !run_time_roi.empty() && run_time_roi[d] >= 0; }
};

// floor(size * scale) as an expression of a symbolic size: floordiv(size * m, 2^k) for the scale
// m / 2^k (every float32 scale is one: 2, 0.5, 0.3 as 10066330 / 2^25), exact as ONNX's float64
// product of the two; undefined for a scale of no such m below 2^31.
Expr scaled_size(const Expr& size, double scale);

// With antialias, axis d's taps: offsets first .. first + count - 1 from the coordinate's floor,
// each weighing kernel((offset - fraction) * scale), normalized (count 0: no antialiasing there).
struct AntialiasTaps {
  int64_t first = 0, count = 0;
};
AntialiasTaps antialias_taps(const ResizeParams& p, size_t d);
// The interpolation kernel of linear (support 1) or cubic (support 2, coefficient a) at distance u.
double resize_kernel(const ResizeParams& p, double u);

// half_pixel_symmetric's shift of axis d's coordinates: the input's center times the share of
// the fractional output size (scale * in) that rounding it to the output size dropped.
double half_pixel_symmetric_offset(const ResizeParams& p, size_t d, int64_t in);

// Checks the parameters against an input shape (ranks, positive scales, roi length, scales left
// to the run time only between symbolic sizes or read from an input).
void check_resize(const std::vector<Expr>& in, const ResizeParams& p);
// `scales`, `roi`: the 1-D floating-point tensors p.run_time_scale and p.run_time_roi index
// (undefined where those are empty).
// Where the neighbours of every interpolated axis together would be more than 4 per output
// (cubic along two axes, linear along three: every axis where only the run knows the scales), the
// axes are interpolated one after another, as ONNX's reference does, through intermediate stages.
Tensor resize(const Tensor& x, const ResizeParams& p, const Tensor& scales = Tensor(), const Tensor& roi = Tensor());

}  // namespace tessera::tensor_ir::ops
