// Matrix, convolution, pooling, normalization, softmax and loss operators; each group registers
// from its own file (nn_*.cc), each op with its gradient. The helpers the groups share are here.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace nn {

void require_dtype(const TensorTypeNode& t, const std::string& what, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (t.dtype.str() == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  fail(what, " must be one of ", list, ", got ", t.dtype.str());
}

void check_quant_param(const std::vector<Type>& args, size_t i, const char* name, DataType dtype, int64_t per_index) {
  const auto& p = tensor_arg(args, i, name);
  if (p.dtype != dtype) fail(name, " must be ", dtype.str(), ", got ", p.dtype.str());
  if (p.ndim() > 1 || (p.numel() != 1 && (per_index == 0 || p.numel() != per_index)))
    fail(name, " must be one value", per_index ? " or " + std::to_string(per_index) + " values" : std::string(),
         ", got shape ", runtime::shape_str(p.shape));
}

namespace {

// The checks that the spatial dimensions [first, first + count) of the call's output are not empty.
std::vector<OpDef::NonEmptyDim> spatial_windows_fit(const CallNode& call, size_t first, size_t count) {
  const Shape& out = as_tensor(call.checked_type, "output").shape;
  std::vector<OpDef::NonEmptyDim> dims;
  for (size_t d = first; d < first + count; ++d)
    if (!out.is_static(d))
      dims.push_back({out.dim(d), tensor_ir::Expr(1),
                      "needs its input (padding included) at least as large as its window in spatial dimension " +
                          std::to_string(d - first) + ": its output size there"});
  return dims;
}

}  // namespace

std::vector<OpDef::NonEmptyDim> window_fits(const CallNode& call) {
  return spatial_windows_fit(call, 2, as_tensor(call.checked_type, "output").ndim() - 2);
}

std::vector<OpDef::NonEmptyDim> window_fits_nhwc(const CallNode& call) { return spatial_windows_fit(call, 1, 2); }

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
  if (static_cast<size_t>(a.numel()) != values.size())
    fail("internal error: constant_of got ", values.size(), " values");
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype.bits == 64) a.data_as<double>()[i] = values[i];
    else if (dtype.bits == 32) a.data_as<float>()[i] = static_cast<float>(values[i]);
    else fail("constant_of: ", dtype.str(), " gradients are computed in float32; cast first");
  }
  return constant(a);
}

Attrs window_attrs(const tensor_ir::ops::PoolGeometry& g) {
  return {{"kernel", g.kernel},
          {"strides", g.strides},
          {"pads", g.pads},
          {"dilations", g.dilations},
          {"ceil_mode", int64_t(g.ceil_mode)}};
}

Attrs conv_attrs(const tensor_ir::ops::ConvGeometry& g) {
  return {{"strides", g.strides}, {"pads", g.pads}, {"dilations", g.dilations}, {"groups", g.groups}};
}

}  // namespace nn

void register_nn_ops(OpRegistry& r) {
  register_nn_matmul_ops(r);
  register_nn_conv_ops(r);
  register_nn_pool_ops(r);
  register_nn_norm_ops(r);
  register_nn_softmax_ops(r);
  register_nn_attention_ops(r);
}

}  // namespace tessera::relay_ir
