// Sampling and linear-algebra operators: grid_sample, roi_align, deform_conv, det. (The
// signal-processing and recurrent ONNX operators are compositions of other ops; see
// frontend/onnx/ops_extra_*.cc.)
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/type_relations.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/ops/extra.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;
using runtime::shape_str;

namespace {

int64_t flag(const Attrs& a, const char* name) {
  int64_t v = a.get_int(name);
  if (v != 0 && v != 1) fail(name, " must be 0 or 1, got ", v);
  return v;
}

Type grid_sample_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "X");
  const auto& grid = tensor_arg(args, 1, "grid");
  require_float(x, "X");
  if (grid.dtype != x.dtype) fail("grid is ", grid.dtype.str(), ", X ", x.dtype.str());
  const ops::GridSampleMode mode = ops::parse_grid_sample_mode(a.get_str("mode"));
  ops::parse_grid_sample_padding(a.get_str("padding_mode"));
  flag(a, "align_corners");
  return tensor_type(Shape(ops::grid_sample_dims(x.shape.dims(), grid.shape.dims(), mode)), x.dtype);
}

ops::RoiAlignParams roi_params(const Attrs& a) {
  ops::RoiAlignParams p;
  const std::string& mode = a.get_str("mode");
  if (mode != "avg" && mode != "max") fail("mode must be avg or max, got '", mode, "'");
  p.max_mode = mode == "max";
  p.output_height = a.get_int("output_height");
  p.output_width = a.get_int("output_width");
  p.sampling_ratio = a.get_int("sampling_ratio");
  p.spatial_scale = a.get_float("spatial_scale");
  const std::string& coords = a.get_str("coordinate_transformation_mode");
  if (coords != "half_pixel" && coords != "output_half_pixel")
    fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '", coords, "'");
  p.half_pixel = coords == "half_pixel";
  if (p.output_height < 1 || p.output_width < 1)
    fail("output_height and output_width must be positive, got ", p.output_height, " and ", p.output_width);
  if (p.sampling_ratio < 0) fail("sampling_ratio must not be negative, got ", p.sampling_ratio);
  return p;
}

Type roi_align_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "X");
  const auto& rois = tensor_arg(args, 1, "rois");
  const auto& idx = tensor_arg(args, 2, "batch_indices");
  require_float(x, "X");
  if (x.ndim() != 4) fail("X must be [N, C, H, W] (4-D), got ", shape_str(x.shape));
  if (rois.dtype != x.dtype || rois.ndim() != 2 || rois.shape[1] != 4)
    fail("rois must be ", x.dtype.str(), "[num_rois, 4], got ", rois.dtype.str(), shape_str(rois.shape));
  if (!idx.dtype.is_integer() || idx.shape != std::vector<int64_t>{rois.shape[0]})
    fail("batch_indices must be integers of shape [", rois.shape[0], "], got ", idx.dtype.str(), shape_str(idx.shape));
  ops::RoiAlignParams p = roi_params(a);
  return tensor_type({rois.shape[0], x.shape[1], p.output_height, p.output_width}, x.dtype);
}

ops::DeformConvParams deform_params(const Attrs& a) {
  ops::DeformConvParams p;
  p.strides = a.get_ints("strides");
  p.dilations = a.get_ints("dilations");
  p.pads = a.get_ints("pads");
  p.groups = a.get_int("groups");
  p.offset_groups = a.get_int("offset_groups");
  if (p.strides.size() != 2 || p.dilations.size() != 2 || p.pads.size() != 4)
    fail("strides and dilations need 2 values, pads 4 (top, left, bottom, right)");
  for (int64_t v : p.strides)
    if (v < 1) fail("strides must be positive");
  for (int64_t v : p.dilations)
    if (v < 1) fail("dilations must be positive");
  for (int64_t v : p.pads)
    if (v < 0) fail("pads must not be negative");
  return p;
}

Type deform_conv_rel(const std::vector<Type>& args, const Attrs& a) {
  const auto& x = tensor_arg(args, 0, "X");
  const auto& w = tensor_arg(args, 1, "W");
  require_float(x, "X");
  if (x.ndim() != 4 || w.ndim() != 4)
    fail("X and W must be 4-D (2-D images), got ", shape_str(x.shape), " and ", shape_str(w.shape));
  for (size_t i = 1; i < 5; ++i)
    if (tensor_arg(args, i, "an input").dtype != x.dtype) fail("every input must be ", x.dtype.str());
  const ops::DeformConvParams p = deform_params(a);
  std::vector<int64_t> out{x.shape[0], w.shape[0]};
  for (int d = 0; d < 2; ++d) {
    const int64_t padded = x.shape[2 + d] + p.pads[d] + p.pads[d + 2];
    const int64_t extent = (w.shape[2 + d] - 1) * p.dilations[d] + 1;
    if (padded < extent)
      fail("the kernel ", shape_str(w.shape), " is larger than the padded input ", shape_str(x.shape));
    out.push_back((padded - extent) / p.strides[d] + 1);
  }
  return tensor_type(out, x.dtype);
}

Type det_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& x = tensor_arg(args, 0, "X");
  require_float(x, "X");
  size_t r = x.ndim();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2])
    fail("X must be [..., M, M] (square matrices), got ", shape_str(x.shape));
  if (x.shape[r - 1] > ops::kMaxDetSize)
    fail("matrices of size ", x.shape[r - 1], " exceed the largest supported size ", ops::kMaxDetSize,
         " (the elimination is unrolled per row)");
  return tensor_type(std::vector<int64_t>(x.shape.begin(), x.shape.end() - 2), x.dtype);
}

}  // namespace

void register_extra_ops(OpRegistry& r) {
  r.add({"grid_sample",
         "grid_sample(X, grid): X [N, C, (D,) H, W] sampled at grid [N, (Do,) Ho, Wo, 2 or 3] of (x, y(, z)) in [-1, 1] "
         "(ONNX GridSample)",
         2,
         2,
         {{"mode", std::string("bilinear")}, {"padding_mode", std::string("zeros")}, {"align_corners", int64_t{0}}},
         grid_sample_rel,
         OpPattern::Injective,
         single_output([](const In& in, const Attrs& a) {
           return ops::grid_sample(in[0], in[1], ops::parse_grid_sample_mode(a.get_str("mode")),
                                   ops::parse_grid_sample_padding(a.get_str("padding_mode")),
                                   a.get_int("align_corners") != 0);
         }),
         "grid_sample"});
  r.add({"roi_align",
         "roi_align(X, rois, batch_indices): bilinear samples of each roi averaged (or maximized) per output bin (ONNX "
         "RoiAlign)",
         3,
         3,
         {{"mode", std::string("avg")},
          {"output_height", int64_t{1}},
          {"output_width", int64_t{1}},
          {"sampling_ratio", int64_t{0}},
          {"spatial_scale", 1.0},
          {"coordinate_transformation_mode", std::string("half_pixel")}},
         roi_align_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) { return ops::roi_align(in[0], in[1], in[2], roi_params(a)); }),
         "roi_align"});
  r.add({"deform_conv",
         "deform_conv(X, W, offset, B, mask): 2-D convolution whose taps read X at offset positions, bilinearly, "
         "scaled by mask (ONNX DeformConv)",
         5,
         5,
         {{"strides", std::vector<int64_t>{1, 1}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"pads", std::vector<int64_t>{0, 0, 0, 0}},
          {"groups", int64_t{1}},
          {"offset_groups", int64_t{1}}},
         deform_conv_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::deform_conv(in[0], in[1], in[2], in[3], in[4], deform_params(a));
         }),
         "deform_conv"});
  r.add({"det",
         "determinants of the square matrices in the last two axes (LU with partial pivoting)",
         1,
         1,
         {},
         det_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs&) { return ops::det(in[0]); }),
         "det"});
}

}  // namespace tessera::relay_ir
