// Elementwise and broadcasting operators, each with its gradient; activations, reductions and
// quantization register from math_activation.cc, math_reduce.cc and math_quantize.cc.
// Derivatives reuse the op's result where it holds what they need (exp: y, tan: 1 + y^2); at
// kinks and ties they follow PyTorch (the one-sided derivative it picks, a zero subgradient for
// abs, halves for maximum's ties).
#include <cmath>

#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/grad_util.h"
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
using E = const Expr&;
using A = const Attrs&;

void unary(OpRegistry& r, const std::string& name, const std::string& doc, TypeRelation rel, Tensor (*f)(const Tensor&),
           GradientFn gradient = nullptr) {
  r.add({name,
         doc,
         1,
         1,
         {},
         std::move(rel),
         OpPattern::Elemwise,
         single_output([f](const In& in, const Attrs&) { return f(in[0]); }),
         "elemwise",
         std::move(gradient)});
}

void intrinsic(OpRegistry& r, const std::string& name, const std::string& doc, Intrinsic op, GradientFn gradient) {
  r.add({name,
         doc,
         1,
         1,
         {},
         unary_float,
         OpPattern::Elemwise,
         single_output([op](const In& in, const Attrs&) { return ops::unary_intrinsic(in[0], op); }),
         "elemwise",
         std::move(gradient)});
}

// The variables that a binary op's operands need at least 1 to broadcast (broadcast_shapes).
std::vector<OpDef::NonEmptyDim> binary_broadcast_checks(const CallNode& call) {
  const Shape &a = tensor_of(call.args.at(0)).shape, &b = tensor_of(call.args.at(1)).shape;
  if (a.is_static() && b.is_static()) return {};
  std::vector<tensor_ir::Var> positive;
  broadcast_shapes(a, b, &positive);
  std::vector<OpDef::NonEmptyDim> checks;
  for (const tensor_ir::Var& v : positive)
    checks.push_back({v, tensor_ir::Expr(int64_t{1}),
                      "broadcasts " + a.str() + " against " + b.str() + ", whose dimensions are equal only where " +
                          v->name + " is at least 1"});
  return checks;
}

void binary(OpRegistry& r, const std::string& name, const std::string& doc, TypeRelation rel,
            Tensor (*f)(const Tensor&, const Tensor&), GradientFn gradient = nullptr) {
  r.add({name,
         doc,
         2,
         2,
         {},
         std::move(rel),
         OpPattern::Broadcast,
         single_output([f](const In& in, const Attrs&) { return f(in[0], in[1]); }),
         "broadcast",
         std::move(gradient),
         false,
         binary_broadcast_checks});
}

Type cast_relation(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = as_tensor(args.at(0), "input");
  DataType to = DataType::parse(attrs.get_str("dtype"));
  if (!to.is_scalar() || to.is_handle()) fail("cannot cast to ", to.str());
  return tensor_type(x.shape, to);
}

Type bitcast_relation(const std::vector<Type>& args, const Attrs& attrs) {
  Type t = cast_relation(args, attrs);
  const DataType from = as_tensor(args.at(0), "input").dtype, to = as_tensor(t, "output").dtype;
  auto width = [](DataType d) { return d.is_bool() ? 8 : d.bits; };
  if (width(from) != width(to))
    fail("cannot read the bits of ", from.str(), " as ", to.str(), " (their widths differ)");
  return t;
}

Type isinf_relation(const std::vector<Type>& args, const Attrs& attrs) {
  for (const char* flag : {"detect_positive", "detect_negative"})
    if (attrs.get_int(flag) != 0 && attrs.get_int(flag) != 1) fail(flag, " must be 0 or 1, got ", attrs.get_int(flag));
  return float_to_bool(args, attrs);
}

Type mod_relation(const std::vector<Type>& args, const Attrs& attrs) {
  if (attrs.get_int("fmod") != 0 && attrs.get_int("fmod") != 1)
    fail("fmod must be 0 or 1, got ", attrs.get_int("fmod"));
  return broadcast_numeric(args, attrs);
}

// Pieces of derivatives.
Expr one(E like) { return scalar_like(1, like); }
Expr zero(E like) { return scalar_like(0, like); }
Expr square(E x) { return mul(x, x); }
Expr unary_call(const char* op, E x) { return call(op, {x}); }
Expr rsqrt(E v) { return div(one(v), unary_call("sqrt", v)); }  // 1 / sqrt(v)

// f'(x) from x alone, or from the result y alone.
GradientFn of_x(std::function<Expr(E x)> f) {
  return elementwise_gradient([f](E x, E, A) { return f(x); });
}
GradientFn of_y(std::function<Expr(E y)> f) {
  return elementwise_gradient([f](E, E y, A) { return f(y); });
}

// Piecewise constant (floor, ceil, round, sign): a zero gradient almost everywhere (as
// PyTorch), so that models using them still train.
std::vector<Expr> zero_gradient(E c, E) { return {zeros_like(arg(c, 0)->checked_type)}; }

// maximum / minimum: the cotangent goes to the operand the result came from; on ties it is
// split in halves, as PyTorch does. `wins` is greater for maximum, less for minimum.
GradientFn extremum_gradient(const char* wins) {
  return broadcast_gradient([wins](E a, E b, E, E g) {
    Expr share = select(compare("equal", a, b), scalar_like(0.5, g), as_mask(compare(wins, a, b), g));
    Expr ga = mul(g, share);
    return std::pair{ga, sub(g, ga)};
  });
}

// y = a^b: dy/da = b a^(b-1), dy/db = y log(a). Like PyTorch, a zero exponent gives a zero
// dy/da (0^-1 would make it NaN at a = 0), and dy/db is zero where a = 0 and b >= 0.
std::pair<Expr, Expr> pow_rule(E a, E b, E y, E g) {
  Expr da = mul(mul(g, b), call("pow", {a, sub(b, scalar_like(1, b))}));
  Expr db = mul(mul(g, y), call("log", {a}));
  Expr a_zero = call("logical_and", {compare("equal", a, zero(a)), compare("greater_equal", b, zero(b))});
  return {select(compare("equal", b, zero(b)), zero(g), da), select(a_zero, zero(g), db)};
}

// a mod b = a - q b with q = trunc(a / b) (fmod) or floor(a / b): q is piecewise constant.
std::pair<Expr, Expr> mod_rule(E a, E b, E y, E g) {
  Expr q = div(a, b);
  Expr whole = as_call(y).attrs.get_int("fmod") != 0
                   ? select(compare("less", q, zero(q)), call("ceil", {q}), call("floor", {q}))
                   : call("floor", {q});
  return {g, neg(mul(g, whole))};
}

// The condition has no cotangent; each branch gets it where it was chosen.
std::vector<Expr> where_gradient(E c, E g) {
  const Expr &cond = arg(c, 0), &x = arg(c, 1), &y = arg(c, 2);
  return {Expr(), collapse_sum_to(select(cond, g, zero(g)), x->checked_type),
          collapse_sum_to(select(cond, zero(g), g), y->checked_type)};
}

// Between float types the cotangent is cast back; from integers or bool there is none.
std::vector<Expr> cast_gradient(E c, E g) {
  DataType from = tensor_of(arg(c, 0)).dtype;
  if (!from.is_float()) return {Expr()};
  return {call("cast", {g}, {{"dtype", from.str()}})};
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  unary(r, "relu", "max(x, 0); NaN stays NaN", unary_numeric, ops::relu,
        of_x([](E x) { return as_mask(compare("greater", x, zero(x)), x); }));
  unary(r, "neg", "-x", unary_numeric, ops::neg, [](E, E g) { return std::vector<Expr>{neg(g)}; });
  unary(r, "abs", "|x|", unary_numeric, ops::abs, of_x([](E x) { return unary_call("sign", x); }));
  unary(r, "reciprocal", "1 / x", unary_float, ops::reciprocal, of_y([](E y) { return neg(square(y)); }));
  unary(r, "sign", "-1, 0 or 1 by the sign of x (NaN stays NaN)", unary_numeric, ops::sign, zero_gradient);
  unary(r, "isnan", "x is NaN (bool)", float_to_bool, ops::isnan);
  unary(r, "logical_not", "not x (bool)", unary_bool, ops::logical_not);
  unary(r, "bitwise_not", "~x (integers)", unary_integer, ops::bitwise_not);
  intrinsic(r, "exp", "e^x", Intrinsic::exp, of_y([](E y) { return y; }));
  intrinsic(r, "log", "natural logarithm", Intrinsic::log, of_x([](E x) { return div(one(x), x); }));
  intrinsic(r, "sqrt", "square root", Intrinsic::sqrt, of_y([](E y) { return div(scalar_like(0.5, y), y); }));
  intrinsic(r, "floor", "round down", Intrinsic::floor, zero_gradient);
  intrinsic(r, "ceil", "round up", Intrinsic::ceil, zero_gradient);
  intrinsic(r, "round", "round half to even", Intrinsic::round, zero_gradient);
  intrinsic(r, "erf", "error function", Intrinsic::erf,
            of_x([](E x) { return mul(scalar_like(2 / std::sqrt(M_PI), x), unary_call("exp", neg(square(x)))); }));
  intrinsic(r, "tanh", "hyperbolic tangent", Intrinsic::tanh, of_y([](E y) { return sub(one(y), square(y)); }));
  intrinsic(r, "sigmoid", "1 / (1 + e^-x)", Intrinsic::sigmoid, of_y([](E y) { return mul(y, sub(one(y), y)); }));
  intrinsic(r, "sin", "sine", Intrinsic::sin, of_x([](E x) { return unary_call("cos", x); }));
  intrinsic(r, "cos", "cosine", Intrinsic::cos, of_x([](E x) { return neg(unary_call("sin", x)); }));
  intrinsic(r, "tan", "tangent", Intrinsic::tan, of_y([](E y) { return add(one(y), square(y)); }));
  intrinsic(r, "asin", "arcsine", Intrinsic::asin, of_x([](E x) { return rsqrt(sub(one(x), square(x))); }));
  intrinsic(r, "acos", "arccosine", Intrinsic::acos, of_x([](E x) { return neg(rsqrt(sub(one(x), square(x)))); }));
  intrinsic(r, "atan", "arctangent", Intrinsic::atan, of_x([](E x) { return div(one(x), add(one(x), square(x))); }));
  intrinsic(r, "sinh", "hyperbolic sine", Intrinsic::sinh, of_x([](E x) { return unary_call("cosh", x); }));
  intrinsic(r, "cosh", "hyperbolic cosine", Intrinsic::cosh, of_x([](E x) { return unary_call("sinh", x); }));
  intrinsic(r, "asinh", "inverse hyperbolic sine", Intrinsic::asinh,
            of_x([](E x) { return rsqrt(add(square(x), one(x))); }));
  // (x - 1)(x + 1) rather than x^2 - 1: no cancellation near 1.
  intrinsic(r, "acosh", "inverse hyperbolic cosine", Intrinsic::acosh,
            of_x([](E x) { return rsqrt(mul(sub(x, one(x)), add(x, one(x)))); }));
  intrinsic(r, "atanh", "inverse hyperbolic tangent", Intrinsic::atanh,
            of_x([](E x) { return div(one(x), sub(one(x), square(x))); }));
  r.add({"isinf",
         "x is infinite (bool), of the signs asked for",
         1,
         1,
         {{"detect_positive", int64_t{1}}, {"detect_negative", int64_t{1}}},
         isinf_relation,
         OpPattern::Elemwise,
         single_output([](const In& in, const Attrs& a) {
           return ops::isinf(in[0], a.get_int("detect_positive") != 0, a.get_int("detect_negative") != 0);
         }),
         "elemwise"});
  r.add({"cast",
         "converts to dtype (float -> int truncates; x -> bool is x != 0)",
         1,
         1,
         {{"dtype", std::string("float32")}},
         cast_relation,
         OpPattern::Elemwise,
         single_output(
             [](const In& in, const Attrs& a) { return ops::cast(in[0], DataType::parse(a.get_str("dtype"))); }),
         "elemwise",
         cast_gradient});

  r.add({"bitcast",
         "x's bits read as dtype, of the same width (a bool is a byte)",
         1,
         1,
         {{"dtype", std::string("float32")}},
         bitcast_relation,
         OpPattern::Elemwise,
         single_output(
             [](const In& in, const Attrs& a) { return ops::bitcast(in[0], DataType::parse(a.get_str("dtype"))); }),
         "elemwise"});

  binary(r, "add", "x + y with numpy broadcasting", broadcast_numeric, ops::add, broadcast_gradient([](E, E, E, E g) {
           return std::pair{g, g};
         }));
  binary(r, "sub", "x - y with numpy broadcasting", broadcast_numeric, ops::sub, broadcast_gradient([](E, E, E, E g) {
           return std::pair{g, neg(g)};
         }));
  binary(r, "mul", "x * y with numpy broadcasting", broadcast_numeric, ops::mul,
         broadcast_gradient([](E a, E b, E, E g) {
           return std::pair{mul(g, b), mul(g, a)};
         }));
  binary(r, "div", "x / y with numpy broadcasting; integers truncate toward zero, / 0 gives 0", broadcast_numeric,
         ops::div, broadcast_gradient([](E, E b, E y, E g) {
           Expr ga = div(g, b);
           return std::pair{ga, neg(mul(ga, y))};  // d(a/b)/db = -(a/b)/b
         }));
  binary(r, "pow", "x ^ y with numpy broadcasting (integers: exact, wrapping)", broadcast_numeric, ops::pow,
         broadcast_gradient(pow_rule));
  binary(r, "maximum", "elementwise max with numpy broadcasting; NaN wins", broadcast_numeric, ops::maximum,
         extremum_gradient("greater"));
  binary(r, "minimum", "elementwise min with numpy broadcasting; NaN wins", broadcast_numeric, ops::minimum,
         extremum_gradient("less"));
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
  r.add({"mod",
         "remainder with numpy broadcasting: fmod=1 C's fmod (sign of x), fmod=0 Python's % (sign of y)",
         2,
         2,
         {{"fmod", int64_t{0}}},
         mod_relation,
         OpPattern::Broadcast,
         single_output([](const In& in, const Attrs& a) { return ops::mod(in[0], in[1], a.get_int("fmod") != 0); }),
         "broadcast",
         broadcast_gradient(mod_rule)});
  r.add({"where",
         "condition ? x : y, all three broadcast",
         3,
         3,
         {},
         where_relation,
         OpPattern::Broadcast,
         single_output([](const In& in, const Attrs&) { return ops::where(in[0], in[1], in[2]); }),
         "broadcast",
         where_gradient});

  register_math_activation_ops(r);
  register_math_reduce_ops(r);
  register_math_quantize_ops(r);
}

}  // namespace tessera::relay_ir
