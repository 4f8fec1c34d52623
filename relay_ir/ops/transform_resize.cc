// resize (ONNX Resize / Upsample) and topk (ONNX TopK), with their gradients. topk's values send
// their cotangent back to the elements they were. Interpolation is separable: each resized axis
// maps its input to its output through a sparse matrix (the taps and weights of every output
// index), and resize applies these one axis after the other. Its gradient applies their
// transposes, as weighted_gather ops whose tables are computed here from the same coordinate
// arithmetic as the forward compute (tensor_ir/ops/transform_resize.cc), in float64 as it is.
#include <cmath>

#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform_resize.h"
#include "tensor_ir/ops/transform_topk.h"

namespace tessera::relay_ir::transform {

namespace ops = tensor_ir::ops;

ops::ResizeParams resize_params(const Shape& in, const Attrs& a, bool scales_input) {
  ops::ResizeParams p;
  p.out_shape = a.get_shape("sizes").dims();
  p.scales = a.get_floats("scales");
  if (scales_input) {
    // The input's entry j scales axis scales_input_axes[j] (every axis, in order, where none are
    // listed); the axes left out keep their size.
    if (!p.scales.empty()) fail("scales are given both as an attribute and as an input");
    std::vector<int64_t> axes = a.get_ints("scales_input_axes");
    if (axes.empty())
      for (size_t d = 0; d < in.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    p.scales.assign(in.size(), 1.0);
    p.run_time_scale.assign(in.size(), -1);
    for (size_t j = 0; j < axes.size(); ++j) {
      if (axes[j] < 0 || axes[j] >= static_cast<int64_t>(in.size()) || p.run_time_scale[axes[j]] >= 0)
        fail("scales_input_axes ", runtime::shape_str(axes), " must name distinct axes of an input of rank ",
             in.size());
      p.scales[axes[j]] = 0;
      p.run_time_scale[axes[j]] = static_cast<int64_t>(j);
    }
  } else if (p.scales.empty() && p.out_shape.size() == in.size()) {
    // Output / input size; where either is symbolic, 1 for a dimension kept as it is, else 0:
    // computed at run time.
    for (size_t d = 0; d < in.size(); ++d) {
      const int64_t* out = tensor_ir::as_const_int(p.out_shape[d]);
      if (in.is_static(d) && out)
        p.scales.push_back(in[d] == 0 ? 1.0 : static_cast<double>(*out) / static_cast<double>(in[d]));
      else p.scales.push_back(dims_equal(in.dim(d), p.out_shape[d]) ? 1.0 : 0.0);
    }
  }
  p.roi = a.get_floats("roi");
  if (const std::vector<int64_t> axes = a.get_ints("roi_input_axes"); !axes.empty()) {
    // The roi input's entry j is the start of axis roi_input_axes[j], entry j + their count its
    // end; the axes left out keep a roi of 0 to 1.
    if (!p.roi.empty()) fail("a roi is given both as an attribute and as an input");
    p.roi.assign(in.size(), 0.0);
    p.roi.resize(2 * in.size(), 1.0);
    p.run_time_roi.assign(in.size(), -1);
    for (size_t j = 0; j < axes.size(); ++j) {
      if (axes[j] < 0 || axes[j] >= static_cast<int64_t>(in.size()) || p.run_time_roi[axes[j]] >= 0)
        fail("roi_input_axes ", runtime::shape_str(axes), " must name distinct axes of an input of rank ", in.size());
      p.run_time_roi[axes[j]] = static_cast<int64_t>(j);
    }
  }
  p.mode = ops::parse_resize_mode(a.get_str("mode"));
  p.coordinates = ops::parse_resize_coordinates(a.get_str("coordinate_transformation_mode"));
  p.nearest = ops::parse_resize_nearest(a.get_str("nearest_mode"));
  p.cubic_coeff_a = a.get_float("cubic_coeff_a");
  p.exclude_outside = a.get_int("exclude_outside") != 0;
  p.antialias = a.get_int("antialias") != 0;
  p.extrapolation_value = a.get_float("extrapolation_value");
  ops::check_resize(in.dims(), p);
  return p;
}

namespace {

using Tensors = std::vector<tensor_ir::Tensor>;

// Whether a call of `args` arguments reads its scales as it runs (its second argument).
bool scales_input(size_t args, const Attrs& attrs) {
  return args - (attrs.get_ints("roi_input_axes").empty() ? 0 : 1) == 2;
}

// resize(x), resize(x, scales) with the scales read while the model runs (the output sizes,
// computed from them before, given as the attribute), and either with a roi read so last.
Type resize_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  if (!x.dtype.is_float() && !x.dtype.is_integer()) fail("unsupported dtype ", x.dtype.str());
  const ops::ResizeParams p = resize_params(x.shape, attrs, scales_input(args.size(), attrs));
  if (!p.run_time_roi.empty()) {
    const auto& roi = tensor_arg(args, args.size() - 1, "roi");
    const int64_t count = 2 * static_cast<int64_t>(attrs.get_ints("roi_input_axes").size());
    if (!roi.dtype.is_float() || roi.shape.size() != 1 || (roi.shape.is_static(0) && roi.shape[0] != count))
      fail("roi must be a 1-D floating-point tensor of ", count, " values, got ", roi.dtype.str(), roi.shape.str());
  }
  if (scales_input(args.size(), attrs)) {
    const auto& scales = tensor_arg(args, 1, "scales");
    const auto count = static_cast<int64_t>(
        std::count_if(p.run_time_scale.begin(), p.run_time_scale.end(), [](int64_t j) { return j >= 0; }));
    if (!scales.dtype.is_float() || scales.shape.size() != 1 || (scales.shape.is_static(0) && scales.shape[0] != count))
      fail("scales must be a 1-D floating-point tensor of ", count, " values, got ", scales.dtype.str(),
           scales.shape.str());
  }
  return tensor_type(Shape(p.out_shape), x.dtype);
}

// A roi read as the model runs, of a length only the run tells, must have its two values per axis.
std::vector<OpDef::NonEmptyDim> resize_checks(const CallNode& call) {
  const size_t axes = call.attrs.get_ints("roi_input_axes").size();
  if (axes == 0) return {};
  const Shape& roi = tensor_of(call.args.back()).shape;
  if (roi.size() != 1 || roi.is_static()) return {};
  const tensor_ir::Expr one(int64_t{1}), count(static_cast<int64_t>(2 * axes));
  const std::string need = "reads a roi of " + std::to_string(2 * axes) + " values (" + roi.str() + " given; ";
  return {{tensor_ir::arith::simplify(roi.dim(0) - count + one), one,
           need + "its length - " + std::to_string(2 * axes) + " + 1 must be positive)"},
          {tensor_ir::arith::simplify(count - roi.dim(0) + one), one,
           need + std::to_string(2 * axes) + " - its length + 1 must be positive)"}};
}

Type topk_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "input");
  if (x.dtype.is_bool()) fail("bool inputs are not supported");
  const Shape out(ops::topk_dims(x.shape.dims(), attrs.get_int("k"), attrs.get_int("axis")));
  return tuple_type({tensor_type(out, x.dtype), tensor_type(out, runtime::kInt64)});
}

// A dimension of symbolic size to take the k best of must hold k elements: `dim - (k - 1)` must
// be at least 1.
std::vector<OpDef::NonEmptyDim> topk_nonempty(const CallNode& call) {
  const Shape& shape = tensor_of(call.args.at(0)).shape;
  const int64_t k = call.attrs.get_int("k");
  const auto axis =
      static_cast<size_t>(ops::normalize_axis(call.attrs.get_int("axis"), static_cast<int64_t>(shape.size())));
  if (shape.is_static(axis) || k == 0) return {};
  return {{tensor_ir::arith::simplify(shape.dim(axis) - tensor_ir::Expr(k - 1)), tensor_ir::Expr(k),
           "takes the " + std::to_string(k) + " best elements along a dimension that must hold them"}};
}

}  // namespace

namespace {
namespace ops = tensor_ir::ops;
using E = const Expr&;

bool is_identity(const ops::ResizeParams& p, size_t d, int64_t in) {
  if (p.scales[d] != 1 || !tensor_ir::is_const_int(p.out_shape[d], in)) return false;
  switch (p.coordinates) {
    case ops::ResizeCoordinates::TfHalfPixelForNn:
      return false;
    case ops::ResizeCoordinates::TfCropAndResize:
      return p.roi[d] == 0 && p.roi[d + p.scales.size()] == 1;
    default:
      return true;
  }
}

// Where output index o of axis d falls in the input.
double input_coordinate(const ops::ResizeParams& p, size_t d, int64_t in, int64_t o) {
  double scale = p.scales[d], out_size = scale * static_cast<double>(in), x = static_cast<double>(o);
  switch (p.coordinates) {
    case ops::ResizeCoordinates::HalfPixel:
      return (x + 0.5) / scale - 0.5;
    case ops::ResizeCoordinates::HalfPixelSymmetric:
      return ops::half_pixel_symmetric_offset(p, d, in) + (x + 0.5) / scale - 0.5;
    case ops::ResizeCoordinates::PytorchHalfPixel:
      return out_size == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case ops::ResizeCoordinates::AlignCorners:
      return out_size == 1 ? 0 : x * (static_cast<double>(in - 1) / (out_size - 1));
    case ops::ResizeCoordinates::Asymmetric:
      return x / scale;
    case ops::ResizeCoordinates::TfHalfPixelForNn:
      return (x + 0.5) / scale;
    case ops::ResizeCoordinates::TfCropAndResize: {
      double start = p.roi[d], end = p.roi[d + p.scales.size()], span = static_cast<double>(in - 1);
      double base = start * span;
      return out_size == 1 ? (end - start) * span / 2 + base : x * ((end - start) * span / (out_size - 1)) + base;
    }
  }
  return x;
}

// Appends the taps of one output index of axis d (input indices, clamped, and weights) to `map`.
void add_taps(const ops::ResizeParams& p, size_t d, double x, int64_t in, AxisMap& map) {
  double fl = std::floor(x), r = x - fl;
  auto f = static_cast<int64_t>(fl);
  auto clamped = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  auto tap = [&](int64_t i, double w) {
    map.index.push_back(clamped(i));
    map.weight.push_back(w);
  };
  if (const ops::AntialiasTaps a = ops::antialias_taps(p, d); a.count > 0) {
    std::vector<double> w;
    double total = 0;
    for (int64_t k = a.first; k < a.first + a.count; ++k) {
      const bool outside = f + k < 0 || f + k >= in;
      w.push_back(p.exclude_outside && outside ? 0 : ops::resize_kernel(p, (static_cast<double>(k) - r) * p.scales[d]));
      total += w.back();
    }
    for (int64_t k = 0; k < a.count; ++k) tap(f + a.first + k, w[k] / total);
    return;
  }
  if (p.mode == ops::ResizeMode::Nearest) {
    bool up = false;
    switch (p.nearest) {
      case ops::ResizeNearest::RoundPreferFloor:
        up = r > 0.5;
        break;
      case ops::ResizeNearest::RoundPreferCeil:
        up = r >= 0.5;
        break;
      case ops::ResizeNearest::Floor:
        up = false;
        break;
      case ops::ResizeNearest::Ceil:
        up = r > 0;
        break;
    }
    tap(up ? f + 1 : f, 1);
    return;
  }
  if (p.mode == ops::ResizeMode::Linear) {
    tap(f, 1 - r);
    tap(f + 1, r);
    return;
  }
  double a = p.cubic_coeff_a, s = 1 - r;
  auto far = [a](double u) {
    double v = u + 1;
    return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
  };
  auto near = [a](double u) { return ((a + 2) * u - (a + 3)) * u * u + 1; };
  double w[4] = {far(r), near(r), near(s), far(s)};
  if (p.exclude_outside) {
    double total = 0;
    for (int k = -1; k <= 2; ++k) {
      if (f + k < 0 || f + k >= in) w[k + 1] = 0;
      total += w[k + 1];
    }
    for (double& v : w) v /= total;
  }
  for (int k = -1; k <= 2; ++k) tap(f + k, w[k + 1]);
}

// Axis d's map from the input to the output; with tf_crop_and_resize, outputs whose
// coordinate leaves the input hold the extrapolation value and get no taps' weight.
AxisMap axis_map(const ops::ResizeParams& p, size_t d, int64_t in) {
  AxisMap map;
  map.rows = p.static_out_shape()[d];
  const ops::AntialiasTaps antialias = ops::antialias_taps(p, d);
  map.taps = antialias.count > 0                     ? antialias.count
             : p.mode == ops::ResizeMode::Nearest ? 1
             : p.mode == ops::ResizeMode::Linear  ? 2
                                                  : 4;
  for (int64_t o = 0; o < map.rows; ++o) {
    double x = input_coordinate(p, d, in, o);
    size_t first = map.weight.size();
    add_taps(p, d, x, in, map);
    if (p.coordinates == ops::ResizeCoordinates::TfCropAndResize && (x < 0 || x > static_cast<double>(in - 1)))
      for (size_t k = first; k < map.weight.size(); ++k) map.weight[k] = 0;
  }
  return map;
}

std::vector<Expr> resize_gradient(const Expr& c, const Expr& g) {
  const auto& x = tensor_of(arg(c, 0));
  if (as_call(c).args.size() > 1) fail("resize: no gradient where the scales or the roi are read as the model runs");
  ops::ResizeParams p = resize_params(x.shape, as_call(c).attrs, false);
  Expr grad = g;
  for (size_t d = 0; d < x.ndim(); ++d)
    if (!is_identity(p, d, x.shape[d]))
      grad = transposed_gather(grad, axis_map(p, d, x.shape[d]), static_cast<int64_t>(d), x.shape[d]);
  return std::vector<Expr>{grad};
}

// The values' cotangent goes to the selected elements (distinct along the axis); the indices
// output has none.
std::vector<Expr> topk_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  Expr values = g.as<TupleNode>() ? g.as<TupleNode>()->elements.at(0) : tuple_get(g, 0);
  return std::vector<Expr>{call("scatter_elements", {zeros_like(x->checked_type), tuple_get(c, 1), values},
                                {{"axis", as_call(c).attrs.get_int("axis")}, {"reduction", std::string("add")}})};
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  r.add({"resize",
         "resize(x[, scales][, roi]): interpolates to the output shape `sizes` (nearest, linear, cubic; ONNX "
         "coordinate transformations); `scales` default to sizes / input sizes, or are read as the model runs from "
         "the second input, one per axis of `scales_input_axes` (all where empty); tf_crop_and_resize's roi is "
         "`roi`, or read as the model runs from the last input where `roi_input_axes` lists its axes",
         1,
         3,
         {required_ints("sizes"),
          {"scales", std::vector<double>{}},
          optional_ints("scales_input_axes"),
          {"roi", std::vector<double>{}},
          optional_ints("roi_input_axes"),
          {"mode", std::string("nearest")},
          {"coordinate_transformation_mode", std::string("half_pixel")},
          {"nearest_mode", std::string("round_prefer_floor")},
          {"cubic_coeff_a", -0.75},
          {"exclude_outside", int64_t{0}},
          {"antialias", int64_t{0}},
          {"extrapolation_value", 0.0}},
         resize_rel,
         OpPattern::Injective,
         single_output([](const Tensors& in, const Attrs& a) {
           const bool scales = scales_input(in.size(), a);
           const ops::ResizeParams p = resize_params(Shape(in[0]->shape), a, scales);
           return ops::resize(in[0], p, scales ? in[1] : tensor_ir::Tensor(),
                              p.run_time_roi.empty() ? tensor_ir::Tensor() : in.back());
         }),
         "resize",
         resize_gradient,
         /*is_view=*/false,
         resize_checks});
  r.add({"topk",
         "the k largest (smallest) elements along an axis, sorted, and their int64 indices (a tuple)",
         1,
         1,
         {{"k", int64_t{0}, true}, {"axis", int64_t{-1}}, {"largest", int64_t{1}}},
         topk_rel,
         OpPattern::Opaque,
         [](const Tensors& in, const Attrs& a, const Type&) {
           return ops::topk(in[0], a.get_int("k"), a.get_int("axis"), a.get_int("largest") != 0);
         },
         "topk",
         topk_gradient,
         /*is_view=*/false,
         topk_nonempty});
}

}  // namespace tessera::relay_ir::transform
