#include "tensor_ir/op.h"

#include <cmath>
#include <limits>

#include "runtime/error.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {

namespace {
// The int64 an integer constant holds (uint64 as its bit pattern). Doubles beyond int64, such as
// the max_value() of 64-bit types, saturate rather than overflow the conversion.
int64_t int_value(DataType t, double v) {
  if (t.is_uint() && v >= 9223372036854775808.0)
    return v >= 18446744073709551615.0 ? -1 : static_cast<int64_t>(static_cast<uint64_t>(v));
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
}  // namespace

Expr make_const(DataType type, double value) {
  DataType scalar = type.element();
  const bool real = scalar.is_float() || scalar.is_narrow_float();
  Expr c = real ? FloatImm::make(scalar, value) : IntImm::make(scalar, int_value(scalar, value));
  return type.is_vector() ? Broadcast::make(c, type.lanes) : c;
}
Expr make_zero(DataType type) { return make_const(type, 0); }
Expr make_one(DataType type) { return make_const(type, 1); }
Expr const_true(int lanes) { return make_const(DataType::Bool(lanes), 1); }
Expr const_false(int lanes) { return make_const(DataType::Bool(lanes), 0); }

const int64_t* as_const_int(const Expr& e) {
  if (!e) return nullptr;
  if (const auto* b = e.as<Broadcast>()) return as_const_int(b->value);
  const auto* c = e.as<IntImm>();
  return c ? &c->value : nullptr;
}

const double* as_const_float(const Expr& e) {
  if (!e) return nullptr;
  if (const auto* b = e.as<Broadcast>()) return as_const_float(b->value);
  const auto* c = e.as<FloatImm>();
  return c ? &c->value : nullptr;
}

bool is_const_int(const Expr& e, int64_t value) {
  const int64_t* c = as_const_int(e);
  return c && *c == value;
}
bool is_zero(const Expr& e) {
  if (const double* f = as_const_float(e)) return *f == 0;
  return is_const_int(e, 0);
}
bool is_one(const Expr& e) {
  if (const double* f = as_const_float(e)) return *f == 1;
  return is_const_int(e, 1);
}

namespace {
bool is_literal(const Expr& e) { return as_const_int(e) || as_const_float(e); }

Expr convert_literal(const Expr& lit, DataType to) {
  double v = as_const_int(lit) ? static_cast<double>(*as_const_int(lit)) : *as_const_float(lit);
  if (!to.is_float() && as_const_float(lit) && v != std::floor(v))
    fail("constant ", v, " cannot be used as ", to.str(), " without a cast");
  return make_const(to, v);
}
}  // namespace

void match_types(Expr& a, Expr& b, const char* op_name) {
  if (!a || !b) fail(op_name, ": undefined operand");
  if (a.type() == b.type()) return;
  // Broadcast scalars against vectors of their type.
  if (a.type().is_scalar() && b.type().is_vector() && a.type() == b.type().element()) {
    a = Broadcast::make(a, b.type().lanes);
    return;
  }
  if (b.type().is_scalar() && a.type().is_vector() && b.type() == a.type().element()) {
    b = Broadcast::make(b, a.type().lanes);
    return;
  }
  if (is_literal(b) && !is_literal(a)) {
    b = convert_literal(b, a.type());
  } else if (is_literal(a) && !is_literal(b)) {
    a = convert_literal(a, b.type());
  } else if (is_literal(a) && is_literal(b)) {
    // Two literals: int64 meets float literal -> float.
    DataType t = a.type().is_float() ? a.type() : b.type();
    a = convert_literal(a, t);
    b = convert_literal(b, t);
  } else {
    fail(op_name, ": operand types differ: ", to_string(a), " is ", a.type().str(), ", ", to_string(b), " is ",
         b.type().str(), " (insert a cast)");
  }
}

#define TESSERA_BINARY(func, Node, name)           \
  Expr func(Expr a, Expr b) {                      \
    match_types(a, b, name);                       \
    return Node::make(std::move(a), std::move(b)); \
  }
TESSERA_BINARY(operator+, Add, "+")
TESSERA_BINARY(operator-, Sub, "-")
TESSERA_BINARY(operator*, Mul, "*")
TESSERA_BINARY(operator/, Div, "/")
TESSERA_BINARY(operator%, Mod, "%")
TESSERA_BINARY(floordiv, FloorDiv, "floordiv")
TESSERA_BINARY(floormod, FloorMod, "floormod")
TESSERA_BINARY(min, Min, "min")
TESSERA_BINARY(max, Max, "max")
TESSERA_BINARY(operator==, EQ, "==")
TESSERA_BINARY(operator!=, NE, "!=")
TESSERA_BINARY(operator<, LT, "<")
TESSERA_BINARY(operator<=, LE, "<=")
TESSERA_BINARY(operator>, GT, ">")
TESSERA_BINARY(operator>=, GE, ">=")
TESSERA_BINARY(logical_and, And, "&&")
TESSERA_BINARY(logical_or, Or, "||")
#undef TESSERA_BINARY

Expr operator-(Expr a) {
  if (const int64_t* c = as_const_int(a); c && a.type().is_scalar()) return IntImm::make(a.type(), -*c);
  if (const double* c = as_const_float(a); c && a.type().is_scalar()) return FloatImm::make(a.type(), -*c);
  return make_zero(a.type()) - a;
}

Expr logical_not(Expr a) { return Not::make(std::move(a)); }

Expr select(Expr condition, Expr true_value, Expr false_value) {
  match_types(true_value, false_value, "select");
  return Select::make(std::move(condition), std::move(true_value), std::move(false_value));
}

Expr cast(DataType type, Expr value) {
  if (!value) fail("cast: undefined value");
  if (value.type().is_vector() && type.is_scalar()) type = type.with_lanes(value.type().lanes);
  if (value.type() == type) return value;
  return Cast::make(type, std::move(value));
}

Expr call(Intrinsic op, std::vector<Expr> args) {
  if (args.size() == 2) match_types(args[0], args[1], intrinsic_name(op));
  if (args.empty() || !args[0]) fail(intrinsic_name(op), ": missing argument");
  DataType t = args[0].type();
  if (op == Intrinsic::isnan || op == Intrinsic::isinf) t = DataType::Bool(t.lanes);
  if (op == Intrinsic::likely) t = args[0].type();
  return Call::make(t, op, std::move(args));
}

}  // namespace tessera::tensor_ir
