#include "relay_ir/ops/type_relations.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/math_reduce.h"
#include "tensor_ir/printer.h"

namespace tessera::relay_ir {

const TensorTypeNode& tensor_arg(const std::vector<Type>& args, size_t i, const std::string& what) {
  if (i >= args.size()) fail("missing ", what, " (argument ", i, ")");
  return as_tensor(args[i], what);
}

void require_float(const TensorTypeNode& t, const std::string& what) {
  if (!t.dtype.is_float()) fail(what, " must be float16, float32 or float64, got ", t.dtype.str());
}

namespace {

enum class Kind { Any, Numeric, Float, Bool, Integer, Unsigned };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Any:
      return "any";
    case Kind::Numeric:
      return "a numeric";
    case Kind::Float:
      return "a float";
    case Kind::Bool:
      return "a bool";
    case Kind::Integer:
      return "an integer";
    case Kind::Unsigned:
      return "an unsigned integer";
  }
  return "";
}

bool matches(DataType t, Kind k) {
  switch (k) {
    case Kind::Any:
      return true;
    case Kind::Numeric:
      return !t.is_bool();
    case Kind::Float:
      return t.is_float();
    case Kind::Bool:
      return t.is_bool();
    case Kind::Integer:
      return t.is_integer();
    case Kind::Unsigned:
      return t.is_uint();
  }
  return false;
}

const TensorTypeNode& operand(const std::vector<Type>& args, size_t i, const char* what, Kind k) {
  const auto& t = as_tensor(args.at(i), what);
  if (!matches(t.dtype, k)) fail(what, " must be ", kind_name(k), " tensor, got ", t.dtype.str());
  return t;
}

Type unary(const std::vector<Type>& args, Kind k) {
  operand(args, 0, "input", k);
  return args[0];
}

Type binary(const std::vector<Type>& args, Kind k, bool to_bool) {
  const auto& a = operand(args, 0, "left operand", k);
  const auto& b = operand(args, 1, "right operand", k);
  if (a.dtype != b.dtype) fail("operand dtypes differ: ", a.dtype.str(), " vs ", b.dtype.str());
  std::vector<tensor_ir::Var> positive;  // checked at each call (binary_broadcast_checks)
  return tensor_type(broadcast_shapes(a.shape, b.shape, &positive), to_bool ? runtime::kBool : a.dtype);
}

}  // namespace

Type same_as_input(const std::vector<Type>& args, const Attrs&) { return unary(args, Kind::Any); }
Type unary_float(const std::vector<Type>& args, const Attrs&) { return unary(args, Kind::Float); }
Type unary_numeric(const std::vector<Type>& args, const Attrs&) { return unary(args, Kind::Numeric); }
Type unary_bool(const std::vector<Type>& args, const Attrs&) { return unary(args, Kind::Bool); }
Type unary_integer(const std::vector<Type>& args, const Attrs&) { return unary(args, Kind::Integer); }

Type float_to_bool(const std::vector<Type>& args, const Attrs&) {
  return tensor_type(operand(args, 0, "input", Kind::Float).shape, runtime::kBool);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::vector<tensor_ir::Var>* positive) {
  if (a.is_static() && b.is_static()) return broadcast_shapes(a.ints(), b.ints());
  size_t n = std::max(a.size(), b.size());
  std::vector<tensor_ir::Expr> out(n);
  for (size_t i = 0; i < n; ++i) {
    tensor_ir::Expr x = i < n - a.size() ? tensor_ir::Expr(1) : a.dim(i - (n - a.size()));
    tensor_ir::Expr y = i < n - b.size() ? tensor_ir::Expr(1) : b.dim(i - (n - b.size()));
    if (tensor_ir::is_const_int(x, 1)) {
      out[i] = y;
    } else if (tensor_ir::is_const_int(y, 1) || dims_equal(x, y)) {
      out[i] = x;
    } else if (auto vars = positive ? tensor_ir::same_dimension_where_positive(x, y) : std::nullopt) {
      out[i] = tensor_ir::simpler_dimension(x, y);
      positive->insert(positive->end(), vars->begin(), vars->end());
    } else {
      const std::string message = "shapes " + a.str() + " and " + b.str() + " broadcast only if dimension " +
                                  std::to_string(i) + " is equal (" + tensor_ir::to_string(x) + " vs " +
                                  tensor_ir::to_string(y) + "), which their symbolic sizes do not tell";
      tensor_ir::require_same_dimension(x, y, message);
      fail(message);
    }
  }
  return Shape(out);
}

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      fail("shapes ", runtime::shape_str(a), " and ", runtime::shape_str(b), " do not broadcast (dimension ", i, ": ",
           x, " vs ", y, ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::vector<tensor_ir::Expr> dims_per_image(const Shape& data) {
  if (data.empty()) fail("internal error: the sizes per image of a scalar");
  std::vector<tensor_ir::Expr> dims = data.dims();
  if (!data.is_static(0)) dims[0] = tensor_ir::Expr(1);
  return dims;
}

Shape keep_batch(const Shape& data,
                 const std::function<std::vector<tensor_ir::Expr>(const std::vector<tensor_ir::Expr>&)>& relation) {
  std::vector<tensor_ir::Expr> out = relation(dims_per_image(data));
  out.at(0) = data.dim(0);
  return Shape(out);
}

Type broadcast_binary(const std::vector<Type>& args, const Attrs&) { return binary(args, Kind::Any, false); }
Type broadcast_numeric(const std::vector<Type>& args, const Attrs&) { return binary(args, Kind::Numeric, false); }
Type broadcast_bool(const std::vector<Type>& args, const Attrs&) { return binary(args, Kind::Bool, false); }
Type broadcast_integer(const std::vector<Type>& args, const Attrs&) { return binary(args, Kind::Integer, false); }
Type broadcast_unsigned(const std::vector<Type>& args, const Attrs&) { return binary(args, Kind::Unsigned, false); }
Type broadcast_compare(const std::vector<Type>& args, const Attrs&) { return binary(args, Kind::Any, true); }

Type where_relation(const std::vector<Type>& args, const Attrs&) {
  const auto& c = operand(args, 0, "condition", Kind::Bool);
  const auto& x = as_tensor(args.at(1), "x");
  const auto& y = as_tensor(args.at(2), "y");
  if (x.dtype != y.dtype) fail("x and y dtypes differ: ", x.dtype.str(), " vs ", y.dtype.str());
  return tensor_type(broadcast_shapes(c.shape, broadcast_shapes(x.shape, y.shape)), x.dtype);
}

Type reduce_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = operand(args, 0, "input", Kind::Numeric);
  auto axes = tensor_ir::ops::reduce_axes(attrs.get_ints("axes"), x.ndim(), "axes");
  int64_t keepdims = attrs.get_int("keepdims");
  if (keepdims != 0 && keepdims != 1) fail("keepdims must be 0 or 1, got ", keepdims);
  return tensor_type(Shape(tensor_ir::ops::reduce_shape(x.shape.dims(), axes, keepdims != 0)), x.dtype);
}

Type arg_reduce_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = operand(args, 0, "input", Kind::Numeric);
  if (x.ndim() == 0) fail("the input must have at least one dimension");
  auto axis = tensor_ir::ops::reduce_axes({attrs.get_int("axis")}, x.ndim(), "axis");
  for (const char* flag : {"keepdims", "select_last_index"})
    if (attrs.get_int(flag) != 0 && attrs.get_int(flag) != 1) fail(flag, " must be 0 or 1, got ", attrs.get_int(flag));
  return tensor_type(Shape(tensor_ir::ops::reduce_shape(x.shape.dims(), axis, attrs.get_int("keepdims") != 0)),
                     runtime::kInt64);
}

}  // namespace tessera::relay_ir
