#include "tensor_ir/ops/math_quantize.h"

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/math.h"

namespace tessera::tensor_ir::ops {

namespace ti = tessera::tensor_ir;

namespace {

// Checks the parameters' shapes and returns how to index one of them for an element of x: per
// tensor (scalar or one element, each its own way), per axis (1-D with x's extent along `axis`),
// or per block (with block_size > 0: x's shape but ceil(extent / block_size) along `axis`).
std::function<std::vector<Expr>(const Tensor&, const std::vector<Var>&)> param_index(
    const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t& axis, int64_t block_size, const char* op) {
  auto n = static_cast<int64_t>(x.ndim());
  if (block_size < 0) fail(op, ": block_size must not be negative, got ", block_size);
  if (block_size > 0) {
    if (axis < -n || axis >= n) fail(op, ": axis ", axis, " is out of range for a ", n, "-D input");
    if (axis < 0) axis += n;
    std::vector<int64_t> blocks = x->dims();
    blocks[axis] = (blocks[axis] + block_size - 1) / block_size;
    for (const Tensor* p : {&scale, &zero_point})
      if ((*p)->dims() != blocks)
        fail(op, ": ", p->name(), " must have shape ", runtime::shape_str(blocks), " (blocks of ", block_size,
             " along axis ", axis, "), got ", runtime::shape_str((*p)->dims()));
    const int64_t a = axis;
    return [a, block_size](const Tensor&, const std::vector<Var>& i) {
      std::vector<Expr> at(i.begin(), i.end());
      at[a] = floordiv(at[a], Expr(block_size));
      return at;
    };
  }
  auto per_tensor = [](const Tensor& p) { return p.ndim() == 0 || (p.ndim() == 1 && p->dim(0) == 1); };
  if (per_tensor(scale)) {
    if (!per_tensor(zero_point)) fail(op, ": the scale is per tensor, the zero point is not");
    return [](const Tensor& p, const std::vector<Var>&) { return std::vector<Expr>(p.ndim(), Expr(0)); };
  }
  if (axis < -n || axis >= n) fail(op, ": axis ", axis, " is out of range for a ", n, "-D input");
  if (axis < 0) axis += n;
  for (const Tensor* p : {&scale, &zero_point})
    if (p->ndim() != 1 || (*p)->dim(0) != x->dim(axis))
      fail(op, ": ", p->name(), " must be a scalar or 1-D with ", x->dim(axis), " elements (input axis ", axis, ")");
  int64_t a = axis;
  return [a](const Tensor&, const std::vector<Var>& i) { return std::vector<Expr>{i[a]}; };
}

}  // namespace

bool is_quantized_type(DataType t) {
  return ((t.is_int() || t.is_uint()) && t.bits <= 16) ||
         (t.is_narrow_float() && t.code != runtime::TypeCode::Float8E8M0FNU && t != runtime::kBFloat16);
}

bool is_scale_type(DataType t) { return t.is_float() || t == runtime::kBFloat16; }

Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                       int64_t block_size) {
  DataType qt = zero_point.dtype();
  if (!is_quantized_type(qt)) fail("quantize_linear: the zero point's type ", qt.str(), " is not a quantized type");
  if (!is_scale_type(scale.dtype())) fail("quantize_linear: the scale must be a float, got ", scale.dtype().str());
  if (!(x.dtype().is_float() || x.dtype() == runtime::kBFloat16 || x.dtype() == runtime::kInt32))
    fail("quantize_linear: the input must be a float or int32 tensor, got ", x.dtype().str());
  auto index = param_index(x, scale, zero_point, axis, block_size, "quantize_linear");
  DataType ft = runtime::kFloat32;
  return compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        const Expr s = scale(index(scale, i)), zp = zero_point(index(zero_point, i));
        Expr v = ti::cast(ft, x(std::vector<Expr>(i.begin(), i.end()))) / ti::cast(ft, s);
        if (qt.is_narrow_float()) {  // rounded by the cast; saturated, NaN kept
          Expr q = v + ti::cast(ft, zp);
          Expr clipped = min(max(q, make_const(ft, qt.min_value())), make_const(ft, qt.max_value()));
          return ti::cast(qt, select(ti::call(Intrinsic::isnan, {q}), q, clipped));
        }
        Expr q = ti::call(Intrinsic::round, {v}) + ti::cast(ft, zp);
        q = min(max(q, make_const(ft, qt.min_value())), make_const(ft, qt.max_value()));
        return ti::cast(qt, q);
      },
      "quantize_linear", "elemwise");
}

Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                         int64_t block_size) {
  DataType xt = x.dtype();
  if (!(is_quantized_type(xt) || xt == runtime::kInt32))
    fail("dequantize_linear: the input's type ", xt.str(), " is not a quantized type");
  if (zero_point.dtype() != xt)
    fail("dequantize_linear: the zero point is ", zero_point.dtype().str(), ", the input ", xt.str());
  if (!is_scale_type(scale.dtype())) fail("dequantize_linear: the scale must be a float, got ", scale.dtype().str());
  auto index = param_index(x, scale, zero_point, axis, block_size, "dequantize_linear");
  DataType ft = scale.dtype();
  return compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        const Expr s = scale(index(scale, i)), zp = zero_point(index(zero_point, i));
        // int32 x - zero point could overflow int32; float32 holds every int8/uint8 difference.
        DataType wide = xt.is_narrow_float()    ? runtime::kFloat32
                        : xt == runtime::kInt32 ? runtime::kInt64
                                                : runtime::kInt32;
        Expr d = ti::cast(wide, x(std::vector<Expr>(i.begin(), i.end()))) - ti::cast(wide, zp);
        DataType ct = ft.bits == 16 ? runtime::kFloat32 : ft;
        return ti::cast(ft, ti::cast(ct, d) * ti::cast(ct, s));
      },
      "dequantize_linear", "elemwise");
}

}  // namespace tessera::tensor_ir::ops
