// Elementwise and broadcasting operators; activations, reductions and quantization register
// from math_activation.cc, math_reduce.cc and math_quantize.cc.
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/math_ops.h"
#include "relay_ir/ops/type_relations.h"
#include "runtime/error.h"
#include "tensor_ir/ops/math.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using tensor_ir::Intrinsic;
using tensor_ir::Tensor;

namespace {

using In = std::vector<Tensor>;

void unary(OpRegistry& r, const std::string& name, const std::string& doc, TypeRelation rel, Tensor (*f)(const Tensor&)) {
  r.add({name, doc, 1, 1, {}, std::move(rel), OpPattern::Elemwise, single_output([f](const In& in, const Attrs&) { return f(in[0]); })});
}

void intrinsic(OpRegistry& r, const std::string& name, const std::string& doc, Intrinsic op) {
  r.add({name, doc, 1, 1, {}, unary_float, OpPattern::Elemwise,
         single_output([op](const In& in, const Attrs&) { return ops::unary_intrinsic(in[0], op); })});
}

void binary(OpRegistry& r, const std::string& name, const std::string& doc, TypeRelation rel,
            Tensor (*f)(const Tensor&, const Tensor&)) {
  r.add({name, doc, 2, 2, {}, std::move(rel), OpPattern::Broadcast,
         single_output([f](const In& in, const Attrs&) { return f(in[0], in[1]); })});
}

Type cast_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = as_tensor(args.at(0), "input");
  DataType to = DataType::parse(attrs.get_str("dtype"));
  if (!to.is_scalar() || to.is_handle()) fail("cannot cast to ", to.str());
  return tensor_type(x.shape, to);
}

Type isinf_relation(const std::vector<Type>& args, const Attrs& attrs) {
  for (const char* flag : {"detect_positive", "detect_negative"})
    if (attrs.get_int(flag) != 0 && attrs.get_int(flag) != 1) fail(flag, " must be 0 or 1, got ", attrs.get_int(flag));
  return float_to_bool(args, attrs);
}

Type mod_relation(const std::vector<Type>& args, const Attrs& attrs) {
  if (attrs.get_int("fmod") != 0 && attrs.get_int("fmod") != 1) fail("fmod must be 0 or 1, got ", attrs.get_int("fmod"));
  return broadcast_numeric(args, attrs);
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  unary(r, "relu", "max(x, 0); NaN stays NaN", unary_numeric, ops::relu);
  unary(r, "neg", "-x", unary_numeric, ops::neg);
  unary(r, "abs", "|x|", unary_numeric, ops::abs);
  unary(r, "reciprocal", "1 / x", unary_float, ops::reciprocal);
  unary(r, "sign", "-1, 0 or 1 by the sign of x (NaN stays NaN)", unary_numeric, ops::sign);
  unary(r, "isnan", "x is NaN (bool)", float_to_bool, ops::isnan);
  unary(r, "logical_not", "not x (bool)", unary_bool, ops::logical_not);
  unary(r, "bitwise_not", "~x (integers)", unary_integer, ops::bitwise_not);
  intrinsic(r, "exp", "e^x", Intrinsic::exp);
  intrinsic(r, "log", "natural logarithm", Intrinsic::log);
  intrinsic(r, "sqrt", "square root", Intrinsic::sqrt);
  intrinsic(r, "floor", "round down", Intrinsic::floor);
  intrinsic(r, "ceil", "round up", Intrinsic::ceil);
  intrinsic(r, "round", "round half to even", Intrinsic::round);
  intrinsic(r, "erf", "error function", Intrinsic::erf);
  intrinsic(r, "tanh", "hyperbolic tangent", Intrinsic::tanh);
  intrinsic(r, "sigmoid", "1 / (1 + e^-x)", Intrinsic::sigmoid);
  intrinsic(r, "sin", "sine", Intrinsic::sin);
  intrinsic(r, "cos", "cosine", Intrinsic::cos);
  intrinsic(r, "tan", "tangent", Intrinsic::tan);
  intrinsic(r, "asin", "arcsine", Intrinsic::asin);
  intrinsic(r, "acos", "arccosine", Intrinsic::acos);
  intrinsic(r, "atan", "arctangent", Intrinsic::atan);
  intrinsic(r, "sinh", "hyperbolic sine", Intrinsic::sinh);
  intrinsic(r, "cosh", "hyperbolic cosine", Intrinsic::cosh);
  intrinsic(r, "asinh", "inverse hyperbolic sine", Intrinsic::asinh);
  intrinsic(r, "acosh", "inverse hyperbolic cosine", Intrinsic::acosh);
  intrinsic(r, "atanh", "inverse hyperbolic tangent", Intrinsic::atanh);
  r.add({"isinf", "x is infinite (bool), of the signs asked for", 1, 1,
         {{"detect_positive", int64_t{1}}, {"detect_negative", int64_t{1}}}, isinf_relation, OpPattern::Elemwise,
         single_output([](const In& in, const Attrs& a) {
           return ops::isinf(in[0], a.get_int("detect_positive") != 0, a.get_int("detect_negative") != 0);
         })});
  r.add({"cast", "converts to dtype (float -> int truncates; x -> bool is x != 0)", 1, 1,
         {{"dtype", std::string("float32")}}, cast_relation, OpPattern::Elemwise,
         single_output([](const In& in, const Attrs& a) { return ops::cast(in[0], DataType::parse(a.get_str("dtype"))); })});

  binary(r, "add", "x + y with numpy broadcasting", broadcast_numeric, ops::add);
  binary(r, "sub", "x - y with numpy broadcasting", broadcast_numeric, ops::sub);
  binary(r, "mul", "x * y with numpy broadcasting", broadcast_numeric, ops::mul);
  binary(r, "div", "x / y with numpy broadcasting; integers truncate toward zero, / 0 gives 0", broadcast_numeric, ops::div);
  binary(r, "pow", "x ^ y with numpy broadcasting (integers: exact, wrapping)", broadcast_numeric, ops::pow);
  binary(r, "maximum", "elementwise max with numpy broadcasting; NaN wins", broadcast_numeric, ops::maximum);
  binary(r, "minimum", "elementwise min with numpy broadcasting; NaN wins", broadcast_numeric, ops::minimum);
  binary(r, "equal", "x == y (bool)", broadcast_compare, ops::equal);
  binary(r, "less", "x < y (bool)", broadcast_compare, ops::less);
  binary(r, "less_equal", "x <= y (bool)", broadcast_compare, ops::less_equal);
  binary(r, "greater", "x > y (bool)", broadcast_compare, ops::greater);
  binary(r, "greater_equal", "x >= y (bool)", broadcast_compare, ops::greater_equal);
  binary(r, "logical_and", "x and y (bool)", broadcast_bool, ops::logical_and);
  binary(r, "logical_or", "x or y (bool)", broadcast_bool, ops::logical_or);
  binary(r, "logical_xor", "x xor y (bool)", broadcast_bool, ops::logical_xor);
  binary(r, "bitwise_and", "x & y (integers)", broadcast_integer, ops::bitwise_and);
  binary(r, "bitwise_or", "x | y (integers)", broadcast_integer, ops::bitwise_or);
  binary(r, "bitwise_xor", "x ^ y (integers)", broadcast_integer, ops::bitwise_xor);
  binary(r, "left_shift", "x << y (unsigned; 0 from the bit width on)", broadcast_unsigned, ops::left_shift);
  binary(r, "right_shift", "x >> y (unsigned; 0 from the bit width on)", broadcast_unsigned, ops::right_shift);
  r.add({"mod", "remainder with numpy broadcasting: fmod=1 C's fmod (sign of x), fmod=0 Python's % (sign of y)", 2, 2,
         {{"fmod", int64_t{0}}}, mod_relation, OpPattern::Broadcast,
         single_output([](const In& in, const Attrs& a) { return ops::mod(in[0], in[1], a.get_int("fmod") != 0); })});
  r.add({"where", "condition ? x : y, all three broadcast", 3, 3, {}, where_relation, OpPattern::Broadcast,
         single_output([](const In& in, const Attrs&) { return ops::where(in[0], in[1], in[2]); })});

  register_math_activation_ops(r);
  register_math_reduce_ops(r);
  register_math_quantize_ops(r);
}

}  // namespace tessera::relay_ir
