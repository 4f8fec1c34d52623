// Converters of ONNX operators whose output is known at import time: Constant, Shape, Size,
// ConstantOfShape, Range, EyeLike. They become graph constants (shapes are static), but for
// ConstantOfShape of a shape of symbolic sizes (its value broadcast to that shape) and Range to a
// limit of symbolic sizes (the arange op).
#include <cmath>
#include <cstring>

#include "frontend/onnx/dim_values.h"
#include "frontend/onnx/ops_transform.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/data_dependent_ops.h"
#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;
using runtime::DataType;
using runtime::NDArray;
using Exprs = std::vector<Expr>;

namespace {

Expr constant(NDArray a) { return relay_ir::constant(std::move(a)); }

NDArray int64_array(const std::vector<int64_t>& values, bool scalar = false) {
  NDArray a = NDArray::empty(
      scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(values.size())}, runtime::kInt64);
  std::copy(values.begin(), values.end(), a.data_as<int64_t>());
  return a;
}

Exprs convert_constant(ConvertContext& c) {
  c.check_attrs({"value", "value_float", "value_floats", "value_int", "value_ints", "sparse_value", "value_string",
                 "value_strings"});
  if (c.node().attribute_size() != 1) c.error("exactly one value attribute must be given");
  if (c.has_attr("sparse_value")) c.error("sparse_value (a sparse tensor) is not supported");
  if (c.has_attr("value_string") || c.has_attr("value_strings")) c.error("string tensors are not supported");
  if (c.has_attr("value")) return {constant(c.attr_tensor("value"))};
  if (c.has_attr("value_int")) return {constant(int64_array({c.attr_int("value_int")}, true))};
  if (c.has_attr("value_ints")) return {constant(int64_array(c.attr_ints("value_ints", {})))};
  std::vector<float> floats = c.has_attr("value_float") ? std::vector<float>{c.attr_float("value_float", 0)}
                                                        : c.attr_floats("value_floats", {});
  NDArray a = NDArray::empty(
      c.has_attr("value_float") ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(floats.size())},
      runtime::kFloat32);
  std::copy(floats.begin(), floats.end(), a.data_as<float>());
  return {constant(a)};
}

Exprs convert_shape(ConvertContext& c) {
  c.check_attrs({"start", "end"});
  const auto& shape = c.input_type(0).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  // Opset 15's start/end: negative ones count from the end; both are clamped to [0, rank].
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clamp(c.attr_int("start", 0)), end = clamp(c.attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(shape[d]);
  return {constant(int64_array(dims))};
}

Exprs convert_size(ConvertContext& c) {
  c.check_attrs({});
  return {constant(int64_array({c.input_type(0).numel()}, true))};
}

Exprs convert_constant_of_shape(ConvertContext& c) {
  c.check_attrs({"value"});
  NDArray value;
  if (c.has_attr("value")) {
    value = c.attr_tensor("value");
    if (value.numel() != 1) c.error("value must hold one element, got " + std::to_string(value.numel()));
  } else {
    value = NDArray::empty({1}, runtime::kFloat32);
  }
  if (c.is_dim_input(0)) {  // a shape of symbolic sizes: the value broadcast to it
    const relay_ir::Shape shape(c.dim_ints(0, "the shape"));
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape.is_static(d) && shape[d] < 0) c.error("the shape " + shape.str() + " has a negative dimension");
    return {c.call("broadcast_to", {constant(value.view_as({}, value.dtype()))}, {{"shape", shape}})};
  }
  std::vector<int64_t> shape = c.constant_ints(0, "the shape");
  for (int64_t d : shape)
    if (d < 0) c.error("the shape " + runtime::shape_str(shape) + " has a negative dimension");
  NDArray out = NDArray::empty(shape, value.dtype());
  size_t bytes = value.dtype().element_bytes();
  auto* dst = static_cast<char*>(out.data());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + i * bytes, value.data(), bytes);
  return {constant(out)};
}

// Range to a limit computed from symbolic sizes: its length an expression of them; start and
// delta constant integers.
// Range whose start or limit is computed from the sizes (positions after a cache of past tokens,
// arange(past, past + L)): an integer range with a constant step, its length an expression of the
// sizes.
Exprs convert_symbolic_range(ConvertContext& c) {
  NDArray delta = c.constant_input(2, "delta");
  if (delta.numel() != 1 || !delta.dtype().is_integer())
    c.error("delta must be one integer where start or limit is computed from the sizes, got " + delta.dtype().str() +
            delta.shape_str());
  const int64_t d = runtime::integer_value(delta, 0);
  if (d == 0) c.error("delta is 0");
  // Start and limit as expressions of the sizes (a constant one must be of delta's dtype).
  auto bound = [&](size_t i, const char* what) -> tensor_ir::Expr {
    if (c.is_dim_input(i)) {
      const std::vector<tensor_ir::Expr> v = c.dim_ints(i, what);
      if (v.size() != 1) c.error(std::string(what) + " must be a scalar");
      return v[0];
    }
    NDArray a = c.constant_input(i, what);
    if (a.numel() != 1 || a.dtype() != delta.dtype())
      c.error(std::string(what) + " must be a scalar of delta's dtype " + delta.dtype().str());
    return runtime::integer_value(a, 0);
  };
  const tensor_ir::Expr start = bound(0, "start"), limit = bound(1, "limit");
  const tensor_ir::Expr span = d > 0 ? limit - start : start - limit;
  tensor_ir::Expr length = tensor_ir::max(tensor_ir::floordiv(span + (std::abs(d) - 1), std::abs(d)), 0);
  tensor_ir::arith::BoundMap sizes;  // the dimension variables are non-negative
  for (const tensor_ir::Var& v : tensor_ir::vars_of(length))
    sizes[v.get()] = {0, tensor_ir::arith::ConstBound::kPosInf};
  length = tensor_ir::arith::simplify(length, sizes);
  const relay_ir::Expr first =
      c.is_dim_input(0)
          ? c.call("shape_values", {}, shape_values_attrs(DimValue::scalar_of(start, delta.dtype()), "start"))
          : constant(c.constant_input(0, "start").view_as({}, delta.dtype()));
  return {c.call("arange", {first, constant(delta.view_as({}, delta.dtype()))},
                 {{"shape", relay_ir::Shape(std::vector<tensor_ir::Expr>{length})}})};
}

Exprs convert_range(ConvertContext& c) {
  c.check_attrs({});
  if (c.is_dim_input(0) || c.is_dim_input(1)) return convert_symbolic_range(c);
  NDArray start = c.constant_input(0, "start"), limit = c.constant_input(1, "limit"),
          delta = c.constant_input(2, "delta");
  try {
    return {constant(runtime::range(start, limit, delta))};
  } catch (const Error& e) {
    const std::string message = e.what(), op = "Range: ";  // the node names the operator
    c.error(message.rfind(op, 0) == 0 ? message.substr(op.size()) : message);
  }
}

Exprs convert_eye_like(ConvertContext& c) {
  c.check_attrs({"dtype", "k"});
  const auto& in = c.input_type(0);
  if (in.shape.size() != 2) c.error("the input must be 2-D, got shape " + runtime::shape_str(in.shape));
  DataType t =
      c.has_attr("dtype") ? dtype_from_onnx(static_cast<int>(c.attr_int("dtype")), c.where() + " dtype") : in.dtype;
  int64_t k = c.attr_int("k", 0), rows = in.shape[0], cols = in.shape[1];
  NDArray out = NDArray::empty(in.shape, t);  // zero-filled
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) store_element(out, i * cols + i + k, 1);
  return {constant(out)};
}

}  // namespace

double constant_scalar(const ConvertContext& c, size_t input, const std::string& what) {
  NDArray a = c.constant_input(input, what);
  if (a.numel() != 1) c.error(what + " must hold one value, got " + std::to_string(a.numel()));
  return element_as_double(a, 0);
}

std::vector<int64_t> normalized_axes(const ConvertContext& c, std::vector<int64_t> axes, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank)
      c.error("axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    if (seen[axis]) c.error("axes names axis " + std::to_string(axis) + " twice");
    seen[axis] = true;
  }
  return axes;
}

void register_transform_const_converters(ConverterTable& t) {
  t.add("Constant", convert_constant);
  t.add("Shape", convert_shape);
  t.add("Size", convert_size);
  t.add("ConstantOfShape", convert_constant_of_shape, {0});
  t.add("Range", convert_range, {0, 1, 2});
  t.add("EyeLike", convert_eye_like);
}

}  // namespace tessera::frontend::onnx
