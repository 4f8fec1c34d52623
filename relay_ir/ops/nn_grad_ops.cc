// Ops only the nn family's gradients build: the weight gradient of a convolution, and the
// backward passes of max and window-sum pooling (nn_grad_pool.cc builds avg and lp pooling's
// from the latter). Their compute definitions are in tensor_ir/ops/nn_grad*.cc.
#include "relay_ir/ops/nn_grad.h"
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn_grad.h"

namespace tessera::relay_ir::nn_grad {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

const TensorTypeNode& float_arg(const std::vector<Type>& args, size_t i, const char* what) {
  const auto& t = nn::arg(args, i, what);
  nn::require_float(t, what);
  return t;
}

Type conv_weight_grad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = float_arg(args, 0, "x");
  const auto& dy = nn::arg(args, 1, "dy");
  if (dy.dtype != x.dtype) fail("dy dtype ", dy.dtype.str(), " differs from x's ", x.dtype.str());
  if (x.ndim() < 3) fail("x must be [N, C, spatial...], got ", runtime::shape_str(x.shape));
  std::vector<int64_t> kernel = attrs.get_ints("kernel");
  auto w = ops::conv_weight_grad_shape(x.shape, dy.shape, kernel, conv_geometry(attrs, x.ndim() - 2, false));
  return tensor_type(w, x.dtype);
}

const TensorTypeNode& pooled_input(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = float_arg(args, 0, "x");
  if (x.ndim() < 3) fail("x must be [N, C, spatial...], got ", runtime::shape_str(x.shape));
  if (attrs.get_ints("kernel").size() + 2 != x.ndim())
    fail("kernel ", runtime::shape_str(attrs.get_ints("kernel")), " must have one entry per spatial dimension of x ",
         runtime::shape_str(x.shape));
  return x;
}

Type max_pool_grad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = pooled_input(args, attrs);
  std::vector<int64_t> pooled = ops::pool_shape(x.shape, pool_geometry(attrs));
  for (size_t i = 1; i < 3; ++i) {
    const auto& t = nn::arg(args, i, i == 1 ? "y" : "dy");
    if (t.dtype != x.dtype || t.shape != pooled)
      fail(i == 1 ? "y" : "dy", " must be ", to_string(tensor_type(pooled, x.dtype)), " (the pooled x), got ", to_string(args[i]));
  }
  return args[0];
}

Type window_sum_grad_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& v = float_arg(args, 0, "v");
  std::vector<int64_t> in = attrs.get_ints("input_shape");
  if (in.size() != v.ndim() || attrs.get_ints("kernel").size() + 2 != in.size())
    fail("input_shape ", runtime::shape_str(in), " and kernel must match v ", runtime::shape_str(v.shape));
  std::vector<int64_t> pooled = ops::pool_shape(in, pool_geometry(attrs));
  if (pooled != v.shape)
    fail("v ", runtime::shape_str(v.shape), " must have the pooled shape ", runtime::shape_str(pooled), " of input_shape ",
         runtime::shape_str(in));
  return tensor_type(in, v.dtype);
}

std::vector<AttrSpec> window() {
  return {{"kernel", std::vector<int64_t>{}, true}, {"strides", std::vector<int64_t>{}}, {"pads", std::vector<int64_t>{}},
          {"dilations", std::vector<int64_t>{}}, {"ceil_mode", int64_t(0)}};
}

}  // namespace

void register_ops(OpRegistry& r) {
  r.add({"conv_weight_grad",
         "the gradient of conv(x, w) with respect to w for the cotangent dy of its result: x [N, C, spatial...] correlated with dy "
         "[N, M, out...] into [M, C / groups, kernel...]",
         2, 2,
         {{"kernel", std::vector<int64_t>{}, true}, {"strides", std::vector<int64_t>{}}, {"pads", std::vector<int64_t>{}},
          {"dilations", std::vector<int64_t>{}}, {"groups", int64_t(1)}},
         conv_weight_grad_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::conv_weight_grad(in[0], in[1], a.get_ints("kernel"), conv_geometry(a, in[0].ndim() - 2, false),
                                        registers_of(a, "conv_weight_grad"));
         })});
  r.add({"max_pool_grad",
         "the gradient of y = max_pool(x) for the cotangent dy: each window's goes to its first maximum (row-major), as PyTorch", 3, 3,
         window(), max_pool_grad_rel, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::max_pool_grad(in[0], in[1], in[2], pool_geometry(a), registers_of(a, "max_pool_grad"));
         })});
  auto sum_attrs = window();
  sum_attrs.push_back({"input_shape", std::vector<int64_t>{}, true});
  r.add({"window_sum_grad",
         "the transpose of a sum over pooling windows: each position of an input_shape input gets the sum of v over the windows "
         "covering it",
         1, 1, sum_attrs, window_sum_grad_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::window_sum_grad(in[0], a.get_ints("input_shape"), pool_geometry(a), registers_of(a, "window_sum_grad"));
         })});
}

}  // namespace tessera::relay_ir::nn_grad
