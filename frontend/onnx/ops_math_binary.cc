// Converters of broadcasting binary, comparison, logical, ternary and variadic ONNX operators.
#include "frontend/onnx/ops_math.h"
#include "relay_ir/ops/type_relations.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;

namespace {

void binary(ConverterTable& t, const std::string& onnx_op, const std::string& op) {
  t.add(onnx_op, one([op](ConvertContext& c) {
          c.check_attrs({});
          return c.call(op, {c.input(0), c.input(1)});
        }));
}

// ONNX Pow takes base and exponent of different dtypes; the result has the base's.
Expr pow(ConvertContext& c) {
  c.check_attrs({});
  runtime::DataType base = c.input_type(0).dtype, exponent = c.input_type(1).dtype;
  auto cast = [&](Expr e, runtime::DataType to) { return c.call("cast", {std::move(e)}, {{"dtype", to.str()}}); };
  // x^2 and x^3 (variances, exported norms) as products: exact, and far cheaper than powf. Only
  // when the exponent does not widen the result by broadcasting.
  const auto& x_shape = c.input_type(0).shape;
  auto e = c.try_constant_input(1);
  std::optional<double> k = e ? uniform_value(*e) : std::nullopt;
  if (k && (*k == 1 || *k == 2 || *k == 3) &&
      relay_ir::broadcast_shapes(x_shape, relay_ir::Shape(e->shape())) == x_shape) {
    Expr out = c.input(0);
    for (int i = 1; i < *k; ++i) out = c.call("mul", {out, c.input(0)});
    return out;
  }
  if (base == exponent) return c.call("pow", {c.input(0), c.input(1)});
  if (base.is_float() && exponent.is_float() && exponent.bits > base.bits)  // numpy computes in the wider one
    return cast(c.call("pow", {cast(c.input(0), exponent), c.input(1)}), base);
  if (base.is_float() || exponent.is_integer()) return c.call("pow", {c.input(0), cast(c.input(1), base)});
  // An integer base with a float exponent: float64 power, truncated back to the base's dtype.
  Expr p = c.call("pow", {cast(c.input(0), runtime::kFloat64), cast(c.input(1), runtime::kFloat64)});
  return cast(p, base);
}

Expr mod(ConvertContext& c) {
  c.check_attrs({"fmod"});
  return c.call("mod", {c.input(0), c.input(1)}, {{"fmod", c.attr_int("fmod", 0)}});
}

Expr bitshift(ConvertContext& c) {
  c.check_attrs({"direction"});
  std::string direction = c.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") c.error("direction must be LEFT or RIGHT, got '" + direction + "'");
  const runtime::DataType x = c.input_type(0).dtype;
  if (!x.is_int()) return c.call(direction == "LEFT" ? "left_shift" : "right_shift", {c.input(0), c.input(1)});
  // Signed (opset 28), through the unsigned type of the same width, where a shift by a negative
  // amount (a huge one, there) or by the width or more gives 0: a left shift drops the bits past
  // the sign bit; a right shift is arithmetic, x < 0 ? ~(~x >> y) : x >> y, -1 for a negative x
  // shifted out.
  const std::string bits = std::to_string(x.bits), u = "uint" + bits;
  auto cast = [&](const Expr& e, const std::string& to) { return c.call("cast", {e}, {{"dtype", to}}); };
  Expr y = cast(c.input(1), u);
  if (direction == "LEFT") return cast(c.call("left_shift", {cast(c.input(0), u), y}), x.str());
  Expr shifted = cast(c.call("right_shift", {cast(c.input(0), u), y}), x.str());
  Expr complement = c.call("bitwise_not", {c.input(0)});
  Expr negative = c.call("bitwise_not", {cast(c.call("right_shift", {cast(complement, u), y}), x.str())});
  return c.call("where", {c.call("less", {c.input(0), scalar_constant(0, x)}), negative, shifted});
}

// Max, Min, Sum, Mean: a chain of broadcasting binary ops over every input.
void variadic(ConverterTable& t, const std::string& onnx_op, const std::string& op, bool mean) {
  t.add(onnx_op, one([op, mean](ConvertContext& c) {
          c.check_attrs({});
          if (c.num_inputs() == 0) c.error("needs at least one input");
          Expr out = c.input(0);
          for (size_t i = 1; i < c.num_inputs(); ++i) out = c.call(op, {out, c.input(i)});
          if (mean && c.num_inputs() > 1) {
            runtime::DataType t = c.input_type(0).dtype;
            out = c.call("div", {out, scalar_constant(static_cast<double>(c.num_inputs()), t)});
          }
          return out;
        }));
}

}  // namespace

void register_math_binary_converters(ConverterTable& t) {
  binary(t, "Add", "add");
  binary(t, "Sub", "sub");
  binary(t, "Mul", "mul");
  binary(t, "Div", "div");
  binary(t, "Equal", "equal");
  binary(t, "Less", "less");
  binary(t, "LessOrEqual", "less_equal");
  binary(t, "Greater", "greater");
  binary(t, "GreaterOrEqual", "greater_equal");
  binary(t, "And", "logical_and");
  binary(t, "Or", "logical_or");
  binary(t, "Xor", "logical_xor");
  binary(t, "BitwiseAnd", "bitwise_and");
  binary(t, "BitwiseOr", "bitwise_or");
  binary(t, "BitwiseXor", "bitwise_xor");
  t.add("Pow", one(pow));
  t.add("Mod", one(mod));
  t.add("BitShift", one(bitshift));
  t.add("Where", one([](ConvertContext& c) {
          c.check_attrs({});
          return c.call("where", {c.input(0), c.input(1), c.input(2)});
        }));
  variadic(t, "Max", "maximum", false);
  variadic(t, "Min", "minimum", false);
  variadic(t, "Sum", "add", false);
  variadic(t, "Mean", "add", true);
}

}  // namespace tessera::frontend::onnx
