#include "tensor_ir/ops/math_quantize.h"

#include "runtime/error.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/math.h"

namespace tessera::tensor_ir::ops {

namespace ti = tessera::tensor_ir;

namespace {

// Checks the parameters' shapes and returns how to index them for an element of x: per tensor
// (scalar or one element) or per axis (1-D with x's extent along `axis`).
std::function<std::vector<Expr>(const std::vector<Var>&)> param_index(const Tensor& x, const Tensor& scale,
                                                                      const Tensor& zero_point, int64_t& axis,
                                                                      const char* op) {
  auto n = static_cast<int64_t>(x.ndim());
  auto per_tensor = [](const Tensor& p) { return p.ndim() == 0 || (p.ndim() == 1 && p->dim(0) == 1); };
  if (per_tensor(scale)) {
    if (!per_tensor(zero_point)) fail(op, ": the scale is per tensor, the zero point is not");
    return [&scale](const std::vector<Var>&) { return std::vector<Expr>(scale.ndim(), Expr(0)); };
  }
  if (axis < -n || axis >= n) fail(op, ": axis ", axis, " is out of range for a ", n, "-D input");
  if (axis < 0) axis += n;
  for (const Tensor* p : {&scale, &zero_point})
    if (p->ndim() != 1 || (*p)->dim(0) != x->dim(axis))
      fail(op, ": ", p->name(), " must be a scalar or 1-D with ", x->dim(axis), " elements (input axis ", axis, ")");
  int64_t a = axis;
  return [a](const std::vector<Var>& i) { return std::vector<Expr>{i[a]}; };
}

}  // namespace

Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis) {
  DataType qt = zero_point.dtype();
  if (!(qt == DataType::Int(8) || qt == DataType::UInt(8)))
    fail("quantize_linear: the zero point must be int8 or uint8, got ", qt.str());
  if (!scale.dtype().is_float()) fail("quantize_linear: the scale must be a float, got ", scale.dtype().str());
  if (!(x.dtype().is_float() || x.dtype() == runtime::kInt32))
    fail("quantize_linear: the input must be a float or int32 tensor, got ", x.dtype().str());
  auto index = param_index(x, scale, zero_point, axis, "quantize_linear");
  DataType ft = runtime::kFloat32;
  return compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> pi = index(i);
        Expr v = ti::cast(ft, x(std::vector<Expr>(i.begin(), i.end())));
        Expr q = ti::call(Intrinsic::round, {v / ti::cast(ft, scale(pi))}) + ti::cast(ft, zero_point(pi));
        q = min(max(q, make_const(ft, qt.min_value())), make_const(ft, qt.max_value()));
        return ti::cast(qt, q);
      },
      "quantize_linear", "elemwise");
}

Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis) {
  DataType xt = x.dtype();
  if (!(xt == DataType::Int(8) || xt == DataType::UInt(8) || xt == runtime::kInt32))
    fail("dequantize_linear: the input must be int8, uint8 or int32, got ", xt.str());
  if (zero_point.dtype() != xt)
    fail("dequantize_linear: the zero point is ", zero_point.dtype().str(), ", the input ", xt.str());
  if (!scale.dtype().is_float()) fail("dequantize_linear: the scale must be a float, got ", scale.dtype().str());
  auto index = param_index(x, scale, zero_point, axis, "dequantize_linear");
  DataType ft = scale.dtype();
  return compute(
      x->shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> pi = index(i);
        // int32 x - zero point could overflow int32; float32 holds every int8/uint8 difference.
        DataType wide = xt == runtime::kInt32 ? runtime::kInt64 : runtime::kInt32;
        Expr d = ti::cast(wide, x(std::vector<Expr>(i.begin(), i.end()))) - ti::cast(wide, zero_point(pi));
        DataType ct = ft.bits == 16 ? runtime::kFloat32 : ft;
        return ti::cast(ft, ti::cast(ct, d) * ti::cast(ct, scale(pi)));
      },
      "dequantize_linear", "elemwise");
}

}  // namespace tessera::tensor_ir::ops
