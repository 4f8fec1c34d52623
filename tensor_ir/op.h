// Building expressions by hand: constants, operators with the implicit conversions of a DSL
// (a constant adopts the other operand's type: A(i) * 2 on float32 data is float32), casts and
// intrinsics. Two non-constant operands of different types are an error, never silently cast.
#pragma once
#include "tensor_ir/ir.h"

namespace tessera::tensor_ir {

Expr make_const(DataType type, double value);  // IntImm or FloatImm, broadcast if vector
Expr make_zero(DataType type);
Expr make_one(DataType type);
Expr const_true(int lanes = 1);
Expr const_false(int lanes = 1);

// The value of an integer / float constant (scalar or broadcast), if `e` is one.
const int64_t* as_const_int(const Expr& e);
const double* as_const_float(const Expr& e);
bool is_const_int(const Expr& e, int64_t value);
bool is_zero(const Expr& e);
bool is_one(const Expr& e);

// Brings a and b to one type: a constant takes the other side's type; otherwise they must match.
void match_types(Expr& a, Expr& b, const char* op_name);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // Div: true division on floats, truncating on integers
Expr operator%(Expr a, Expr b);  // Mod
Expr operator-(Expr a);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);  // named, not &&: `if (a && b)` on handles must stay a test
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
Expr select(Expr condition, Expr true_value, Expr false_value);
Expr cast(DataType type, Expr value);  // no node when the type already matches
Expr call(Intrinsic op, std::vector<Expr> args);

inline Expr exp(Expr x) { return call(Intrinsic::exp, {std::move(x)}); }
inline Expr log(Expr x) { return call(Intrinsic::log, {std::move(x)}); }
inline Expr sqrt(Expr x) { return call(Intrinsic::sqrt, {std::move(x)}); }
inline Expr tanh(Expr x) { return call(Intrinsic::tanh, {std::move(x)}); }
inline Expr abs(Expr x) { return call(Intrinsic::abs, {std::move(x)}); }

}  // namespace tessera::tensor_ir
