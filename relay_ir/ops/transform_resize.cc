// resize (ONNX Resize / Upsample) and topk (ONNX TopK).
#include "relay_ir/ops/transform_common.h"
#include "runtime/error.h"
#include "tensor_ir/ops/transform_resize.h"
#include "tensor_ir/ops/transform_topk.h"

namespace tessera::relay_ir::transform {

namespace ops = tensor_ir::ops;

ops::ResizeParams resize_params(const std::vector<int64_t>& in, const Attrs& a) {
  ops::ResizeParams p;
  p.out_shape = a.get_ints("sizes");
  p.scales = a.get_floats("scales");
  if (p.scales.empty() && p.out_shape.size() == in.size())
    for (size_t d = 0; d < in.size(); ++d)
      p.scales.push_back(in[d] == 0 ? 1.0 : static_cast<double>(p.out_shape[d]) / static_cast<double>(in[d]));
  p.roi = a.get_floats("roi");
  p.mode = ops::parse_resize_mode(a.get_str("mode"));
  p.coordinates = ops::parse_resize_coordinates(a.get_str("coordinate_transformation_mode"));
  p.nearest = ops::parse_resize_nearest(a.get_str("nearest_mode"));
  p.cubic_coeff_a = a.get_float("cubic_coeff_a");
  p.exclude_outside = a.get_int("exclude_outside") != 0;
  p.extrapolation_value = a.get_float("extrapolation_value");
  ops::check_resize(in, p);
  return p;
}

namespace {

using Tensors = std::vector<tensor_ir::Tensor>;

Type resize_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = arg(args, 0, "input");
  if (!x.dtype.is_float() && !x.dtype.is_integer()) fail("unsupported dtype ", x.dtype.str());
  return tensor_type(resize_params(x.shape, attrs).out_shape, x.dtype);
}

Type topk_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = arg(args, 0, "input");
  if (x.dtype.is_bool()) fail("bool inputs are not supported");
  ops::Shape out = ops::topk_shape(x.shape, attrs.get_int("k"), attrs.get_int("axis"));
  return tuple_type({tensor_type(out, x.dtype), tensor_type(out, runtime::kInt64)});
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  r.add({"resize",
         "interpolates to the output shape `sizes` (nearest, linear, cubic; ONNX coordinate transformations); "
         "`scales` default to sizes / input sizes",
         1, 1,
         {required_ints("sizes"), {"scales", std::vector<double>{}}, {"roi", std::vector<double>{}}, {"mode", std::string("nearest")},
          {"coordinate_transformation_mode", std::string("half_pixel")}, {"nearest_mode", std::string("round_prefer_floor")},
          {"cubic_coeff_a", -0.75}, {"exclude_outside", int64_t{0}}, {"extrapolation_value", 0.0}},
         resize_rel, OpPattern::Injective, single_output([](const Tensors& in, const Attrs& a) {
           ops::Shape shape;
           for (size_t d = 0; d < in[0].ndim(); ++d) shape.push_back(in[0]->dim(d));
           return ops::resize(in[0], resize_params(shape, a));
         })});
  r.add({"topk", "the k largest (smallest) elements along an axis, sorted, and their int64 indices (a tuple)", 1, 1,
         {{"k", int64_t{0}, true}, {"axis", int64_t{-1}}, {"largest", int64_t{1}}}, topk_rel, OpPattern::Opaque,
         [](const Tensors& in, const Attrs& a, const Type&) {
           return ops::topk(in[0], a.get_int("k"), a.get_int("axis"), a.get_int("largest") != 0);
         }});
}

}  // namespace tessera::relay_ir::transform
