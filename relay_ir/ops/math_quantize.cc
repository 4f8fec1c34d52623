// Linear quantization.
#include "relay_ir/ops/math_ops.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/ops/math_quantize.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using tensor_ir::Tensor;

namespace {

using In = std::vector<Tensor>;

// Checks scale and zero point against x: both scalars (or one element), both 1-D along axis, or
// both blocked (the compute definition checks their shapes).
void check_params(const TensorTypeNode& x, const TensorTypeNode& scale, const TensorTypeNode& zero_point, int64_t axis,
                  int64_t block_size) {
  if (!ops::is_scale_type(scale.dtype)) fail("the scale must be a float tensor, got ", scale.dtype.str());
  if (block_size != 0) {
    if (scale.shape != zero_point.shape || scale.ndim() != x.ndim())
      fail("blocked scale ", runtime::shape_str(scale.shape), " and zero point ", runtime::shape_str(zero_point.shape),
           " must both have the input's rank ", x.ndim());
    return;
  }
  auto per_tensor = [](const TensorTypeNode& p) { return p.ndim() == 0 || (p.ndim() == 1 && p.shape[0] == 1); };
  if (per_tensor(scale) && per_tensor(zero_point)) return;
  auto n = static_cast<int64_t>(x.ndim());
  if (axis < -n || axis >= n) fail("axis ", axis, " is out of range for a ", n, "-D input");
  int64_t extent = x.shape[axis < 0 ? axis + n : axis];
  if (scale.ndim() != 1 || scale.shape[0] != extent || zero_point.ndim() != 1 || zero_point.shape[0] != extent)
    fail("scale ", runtime::shape_str(scale.shape), " and zero point ", runtime::shape_str(zero_point.shape),
         " must both be scalars or both 1-D with ", extent, " elements (input axis ", axis, ")");
}

Type quantize_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = as_tensor(args.at(0), "input");
  const auto& scale = as_tensor(args.at(1), "scale");
  const auto& zp = as_tensor(args.at(2), "zero point");
  if (!(ops::is_scale_type(x.dtype) || x.dtype == runtime::kInt32))
    fail("the input must be float or int32, got ", x.dtype.str());
  if (!ops::is_quantized_type(zp.dtype))
    fail("the zero point must be of a quantized type (8- or 16-bit, 4- or 2-bit integers, float8, float4), got ",
         zp.dtype.str());
  check_params(x, scale, zp, attrs.get_int("axis"), attrs.get_int("block_size"));
  return tensor_type(x.shape, zp.dtype);
}

Type dequantize_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = as_tensor(args.at(0), "input");
  const auto& scale = as_tensor(args.at(1), "scale");
  const auto& zp = as_tensor(args.at(2), "zero point");
  if (!(ops::is_quantized_type(x.dtype) || x.dtype == runtime::kInt32))
    fail("the input must be of a quantized type or int32, got ", x.dtype.str());
  if (zp.dtype != x.dtype) fail("the zero point is ", zp.dtype.str(), ", the input ", x.dtype.str());
  check_params(x, scale, zp, attrs.get_int("axis"), attrs.get_int("block_size"));
  return tensor_type(x.shape, scale.dtype);
}

}  // namespace

void register_math_quantize_ops(OpRegistry& r) {
  r.add({"quantize_linear",
         "saturate(round_half_even(x / scale) + zero_point) in zero_point's dtype; per tensor, axis or block",
         3,
         3,
         {{"axis", int64_t{1}}, {"block_size", int64_t{0}}},
         quantize_relation,
         OpPattern::Broadcast,
         single_output([](const In& in, const Attrs& a) {
           return ops::quantize_linear(in[0], in[1], in[2], a.get_int("axis"), a.get_int("block_size"));
         }),
         "elemwise"});
  r.add({"dequantize_linear",
         "(x - zero_point) * scale in scale's dtype; per tensor, axis or block",
         3,
         3,
         {{"axis", int64_t{1}}, {"block_size", int64_t{0}}},
         dequantize_relation,
         OpPattern::Broadcast,
         single_output([](const In& in, const Attrs& a) {
           return ops::dequantize_linear(in[0], in[1], in[2], a.get_int("axis"), a.get_int("block_size"));
         }),
         "elemwise"});
}

}  // namespace tessera::relay_ir
