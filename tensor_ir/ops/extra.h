// Compute definitions of the extra family: sampling (grid_sample, roi_align) and linear algebra
// (det). Every data-dependent read (a sampled pixel, a pivot row) uses an index clamped into its
// tensor, with the element's validity tested separately, so no input can make a kernel read out
// of bounds. Coordinates are computed in float32 (float64 for float64 data).
#pragma once
#include <string>

#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir::ops {

// --- sampling (extra_sampling.cc) -----------------------------------------------------------

enum class GridSampleMode { Bilinear, Nearest, Bicubic };
enum class GridSamplePadding { Zeros, Border, Reflection };
GridSampleMode parse_grid_sample_mode(const std::string& name);
GridSamplePadding parse_grid_sample_padding(const std::string& name);

// ONNX GridSample (opsets 16, 20) / PyTorch grid_sample: x [N, C, H, W] sampled at grid
// [N, Ho, Wo, 2] ((x, y) in [-1, 1] spanning the input: its corner pixels' centres with
// align_corners, their outer edges without) -> [N, C, Ho, Wo]; a volume x [N, C, D, H, W] at grid
// [N, Do, Ho, Wo, 3] ((x, y, z)) likewise, nearest or (tri)linear. Bicubic (2-D only) uses
// A = -0.75 and pads each of its 16 taps.
Tensor grid_sample(const Tensor& x, const Tensor& grid, GridSampleMode mode, GridSamplePadding padding,
                   bool align_corners);
// Its output shape; the batch, channels and the grid's sizes may be symbolic, X's spatial sizes
// not (the unnormalized coordinates scale by them).
std::vector<Expr> grid_sample_dims(const std::vector<Expr>& x, const std::vector<Expr>& grid, GridSampleMode mode);

struct RoiAlignParams {
  bool max_mode = false;  // else average
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // samples per bin along each axis; 0: ceil(roi size / output size)
  double spatial_scale = 1;
  bool half_pixel = true;  // shift the roi by -0.5 (ONNX "half_pixel"), else "output_half_pixel"
};
// ONNX RoiAlign as ONNX Runtime computes it: x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in the
// input's coordinates before spatial_scale), batch_indices [R] (integers, clamped to [0, N))
// -> [R, C, output_height, output_width]. Max mode takes, per sample, the largest of its four
// weighted bilinear taps. With sampling_ratio 0 the sample loops' bounds come from the rois.
Tensor roi_align(const Tensor& x, const Tensor& rois, const Tensor& batch_indices, const RoiAlignParams& p);

// --- deformable convolution (extra_deform_conv.cc) ------------------------------------------

struct DeformConvParams {
  std::vector<int64_t> strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};  // pads: top, left, bottom, right
  int64_t groups = 1, offset_groups = 1;
};
// ONNX DeformConv of images: x [N, C, H, W], w [oC, C / groups, kH, kW], offset
// [N, offset_groups * kH * kW * 2, Ho, Wo] ((y, x) per tap), bias [oC], mask
// [N, offset_groups * kH * kW, Ho, Wo] -> [N, oC, Ho, Wo]; float16 accumulates in float32.
Tensor deform_conv(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& bias, const Tensor& mask,
                   const DeformConvParams& p);

// --- linear algebra (extra_linalg.cc) -------------------------------------------------------

// The largest matrix det accepts: it unrolls its elimination into 3 stages per row.
constexpr int64_t kMaxDetSize = 64;
// Determinants of x [..., M, M] -> [...]: LU factorization with partial pivoting (the first
// largest |pivot|, like LAPACK), in float32 for float16 data. NaN anywhere in a matrix gives NaN.
Tensor det(const Tensor& x);

}  // namespace tessera::tensor_ir::ops
