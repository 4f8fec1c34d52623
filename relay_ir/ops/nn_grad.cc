// Gradients of the nn family's ops: the ops they need are registered first, then each group's
// gradients (nn_grad_*.cc); matmul's is here. Helpers shared by the groups (nn_grad.h).
#include "relay_ir/ops/nn_grad.h"

#include "relay_ir/ops/families.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace nn_grad {

const CallNode& as_call(const Expr& e) { return *e.as<CallNode>(); }
const Expr& arg(const Expr& call, size_t i) { return as_call(call).args.at(i); }
const TensorTypeNode& tensor_of(const Expr& e) { return as_tensor(infer_type(e), "value"); }

Expr element(const Expr& tuple_grad, size_t i) {
  const auto* t = tuple_grad.as<TupleNode>();
  return t && i < t->elements.size() ? t->elements[i] : Expr();
}

bool is_zeros(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (!c) return false;
  const runtime::NDArray& a = c->data;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = a.dtype().bits == 64 ? a.data_as<double>()[i] : a.dtype().bits == 32 ? a.data_as<float>()[i] : 1.0;
    if (v != 0) return false;
  }
  return a.dtype().is_float();
}

Expr reshape(const Expr& x, const std::vector<int64_t>& shape) {
  return tensor_of(x).shape == shape ? x : call("reshape", {x}, {{"shape", shape}});
}

Expr reduce_sum(const Expr& x, const std::vector<int64_t>& axes, bool keepdims) {
  return call("reduce_sum", {x}, {{"axes", axes}, {"keepdims", int64_t(keepdims)}});
}

Expr reduce_mean(const Expr& x, const std::vector<int64_t>& axes, bool keepdims) {
  return call("reduce_mean", {x}, {{"axes", axes}, {"keepdims", int64_t(keepdims)}});
}

Expr cast_to(const Expr& x, DataType dtype) {
  return tensor_of(x).dtype == dtype ? x : call("cast", {x}, {{"dtype", dtype.str()}});
}

Expr scalar_like(double value, const Expr& like) { return scalar_of(value, tensor_of(like).dtype); }

Expr channel_view(const Expr& v, size_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[1] = tensor_of(v).shape.at(0);
  return reshape(v, shape);
}

std::vector<int64_t> all_but_channels(size_t rank) {
  std::vector<int64_t> axes{0};
  for (size_t d = 2; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  return axes;
}

Expr constant_of(const std::vector<int64_t>& shape, DataType dtype, const std::vector<double>& values) {
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  if (static_cast<size_t>(a.numel()) != values.size()) fail("internal error: constant_of got ", values.size(), " values");
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype.bits == 64) a.data_as<double>()[i] = values[i];
    else if (dtype.bits == 32) a.data_as<float>()[i] = static_cast<float>(values[i]);
    else fail("constant_of: ", dtype.str(), " gradients are computed in float32; cast first");
  }
  return constant(a);
}

Attrs window_attrs(const tensor_ir::ops::PoolGeometry& g) {
  return {{"kernel", g.kernel}, {"strides", g.strides}, {"pads", g.pads}, {"dilations", g.dilations}, {"ceil_mode", int64_t(g.ceil_mode)}};
}

Attrs conv_attrs(const tensor_ir::ops::ConvGeometry& g) {
  return {{"strides", g.strides}, {"pads", g.pads}, {"dilations", g.dilations}, {"groups", g.groups}};
}

}  // namespace nn_grad

namespace {

using nn_grad::reshape;
using nn_grad::tensor_of;

// x with its last two axes swapped.
Expr swap_last_two(const Expr& x) {
  size_t n = tensor_of(x).ndim();
  std::vector<int64_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[n - 1], perm[n - 2]);
  return call("transpose", {x}, {{"perm", perm}});
}

}  // namespace

void register_nn_gradients(OpRegistry& r) {
  nn_grad::register_ops(r);
  nn_grad::register_norm_ops(r);
  // C = A @ B: dA = dC @ B^T and dB = A^T @ dC, batch axes summed back where they broadcast.
  r.set_gradient("matmul", [](const Expr& c, const Expr& g) {
    const auto* node = c.as<CallNode>();
    const Expr &a = node->args[0], &b = node->args[1];
    // A 1-D A is a row and a 1-D B a column: work with their matrix forms.
    Expr a2 = tensor_of(a).ndim() == 1 ? reshape(a, {1, tensor_of(a).shape[0]}) : a;
    Expr b2 = tensor_of(b).ndim() == 1 ? reshape(b, {tensor_of(b).shape[0], 1}) : b;
    Expr g2 = reshape(g, tensor_of(call("matmul", {a2, b2})).shape);
    Expr da = collapse_sum_to(call("matmul", {g2, swap_last_two(b2)}), a2->checked_type);
    Expr db = collapse_sum_to(call("matmul", {swap_last_two(a2), g2}), b2->checked_type);
    return std::vector<Expr>{reshape(da, tensor_of(a).shape), reshape(db, tensor_of(b).shape)};
  });
  nn_grad::register_matmul(r);
  nn_grad::register_conv(r);
  nn_grad::register_pool(r);
  nn_grad::register_norm(r);
  nn_grad::register_softmax(r);
}

}  // namespace tessera::relay_ir
