#include "tensor_ir/transforms/narrow_types.h"

#include <cfloat>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "runtime/error.h"
#include "runtime/narrow_types.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"

namespace tessera::tensor_ir {

namespace {

using runtime::TypeCode;

using Format = runtime::NarrowFloatFormat;
using Specials = runtime::NarrowSpecials;

Expr reinterpret(DataType type, const Expr& x) { return Call::make(type, Intrinsic::reinterpret, {x}); }
Expr shl(const Expr& x, int64_t n) { return call(Intrinsic::shift_left, {x, make_const(x.type(), n)}); }
Expr shr(const Expr& x, int64_t n) { return call(Intrinsic::shift_right, {x, make_const(x.type(), n)}); }
Expr bit_and(const Expr& x, int64_t mask) { return call(Intrinsic::bitwise_and, {x, make_const(x.type(), mask)}); }
Expr bit_or(const Expr& x, const Expr& y) { return call(Intrinsic::bitwise_or, {x, y}); }
Expr constant(const Expr& like, double v) { return make_const(like.type(), v); }

// body(x) with `value` bound to x once: the conversions read their operands many times.
template <typename F>
Expr bound(const Expr& value, const char* name, F body) {
  if (value.as<VarNode>() || value.as<IntImm>() || value.as<FloatImm>()) return body(value);
  Var x(name, value.type());
  return Let::make(x, value, body(Expr(x)));
}

// 2^k as a float32, for int32 k in [-126, 127].
Expr power_of_two(const Expr& k) {
  return reinterpret(runtime::kFloat32.with_lanes(k.type().lanes), shl(k + constant(k, 127), 23));
}

Expr float_of_bits(const Expr& bits32) {
  return reinterpret(runtime::kFloat32.with_lanes(bits32.type().lanes), bits32);
}

Expr decode_small_float(const Format& f, const Expr& c /* int32 code */) {
  const int m = f.mantissa_bits;
  const int64_t max_exponent = f.max_exponent(), max_mantissa = (1 << m) - 1;
  const Expr exponent = bit_and(shr(c, m), max_exponent), mantissa = bit_and(c, max_mantissa);
  const Expr significand = select(exponent > constant(c, 0), mantissa + constant(c, 1 << m), mantissa);
  const Expr magnitude = cast(runtime::kFloat32.with_lanes(c.type().lanes), significand) *
                         power_of_two(max(exponent, constant(c, 1)) - constant(c, f.bias + m));
  // Bit patterns, not negations or NaN literals: device and C compilers may drop the sign of a
  // zero, and x86 makes 0/0 a negative NaN.
  const Expr sign = shl(bit_and(shr(c, f.exponent_bits + m), 1), 31);
  const Expr value = bit_or(reinterpret(c.type(), magnitude), sign);
  const Expr nan = bit_or(sign, constant(c, 0x7FC00000));
  switch (f.specials) {
    case Specials::IEEE: {
      const Expr inf = bit_or(sign, constant(c, 0x7F800000));
      return float_of_bits(
          select(exponent == constant(c, max_exponent), select(mantissa == constant(c, 0), inf, nan), value));
    }
    case Specials::AllOnes: {
      const int64_t all_ones = (max_exponent << m) | max_mantissa;
      return float_of_bits(select(bit_and(c, all_ones) == constant(c, all_ones), nan, value));
    }
    case Specials::NegZero:  // the NaN has the sign bit's place, and reads as a negative NaN
      return float_of_bits(
          select(c == constant(c, f.sign_bit()), constant(c, static_cast<int32_t>(0xFFC00000u)), value));
    case Specials::None:
      break;
  }
  return float_of_bits(value);
}

// The code of `v` given its rounded magnitude's `code`, NaN and overflow taken into account.
Expr special_codes(const Format& f, const Expr& v, const Expr& sign, const Expr& finite, const Expr& code) {
  const int m = f.mantissa_bits;
  const DataType i32 = code.type();
  const int64_t max_exponent = f.max_exponent(), sign_bit = f.sign_bit(), max_code = f.max_code();
  const Expr overflow = logical_or(logical_not(finite), code > make_const(i32, max_code));
  const Expr is_nan = call(Intrinsic::isnan, {v});
  const Expr signed_code = bit_or(sign, code);
  switch (f.specials) {
    case Specials::IEEE: {
      const Expr infinity = bit_or(sign, make_const(i32, max_exponent << m));
      const Expr nan = bit_or(sign, make_const(i32, (max_exponent << m) | (1 << (m - 1))));
      return select(is_nan, nan, select(overflow, infinity, signed_code));
    }
    case Specials::AllOnes:
      return select(logical_or(is_nan, overflow), bit_or(sign, make_const(i32, (max_exponent << m) | ((1 << m) - 1))),
                    signed_code);
    case Specials::NegZero:
      return select(logical_or(is_nan, overflow), make_const(i32, sign_bit),
                    select(code == make_const(i32, 0), code, signed_code));
    case Specials::None:  // NaN as ml_dtypes converts it: the sign flipped onto zero
      return select(is_nan, bit_or(sign, make_const(i32, sign_bit)) - sign,
                    select(overflow, bit_or(sign, make_const(i32, max_code)), signed_code));
  }
  return signed_code;
}

// The int32 code of float32 `v` (a variable) in format `f`.
Expr encode_small_float(const Format& f, const Expr& v) {
  const int m = f.mantissa_bits;
  const DataType i32 = runtime::kInt32.with_lanes(v.type().lanes);
  const Expr bits = reinterpret(i32, v);
  const Expr sign_bit = make_const(i32, f.sign_bit());
  // Infinities and NaN take the special codes; computing with them would be poison.
  const Expr finite = abs(v) <= constant(v, FLT_MAX);
  const Expr a = select(finite, abs(v), constant(v, 0));
  return bound(select(bits < make_const(i32, 0), sign_bit, make_const(i32, 0)), "sign", [&](const Expr& sign) {
    return bound(a, "magnitude", [&](const Expr& a) {
      const Expr exponent = max(shr(reinterpret(i32, a), 23) - make_const(i32, 127 - f.bias), make_const(i32, 1));
      return bound(exponent, "exponent", [&](const Expr& exponent) {
        const Expr scaled = a * power_of_two(make_const(i32, f.bias + m) - exponent);
        const Expr code = shl(exponent - make_const(i32, 1), m) + cast(i32, call(Intrinsic::round, {scaled}));
        return bound(code, "code", [&](const Expr& code) { return special_codes(f, v, sign, finite, code); });
      });
    });
  });
}

Expr decode_e8m0(const Expr& c /* int32 variable */) {
  const Expr bits = select(c == constant(c, 0), constant(c, 0x00400000), shl(c, 23));
  return float_of_bits(select(c == constant(c, 0xFF), constant(c, 0x7FC00000), bits));
}

Expr encode_e8m0(const Expr& v /* variable */) {
  const DataType i32 = runtime::kInt32.with_lanes(v.type().lanes);
  const Expr b = reinterpret(i32, v);
  return bound(shr(b, 23), "exponent", [&](const Expr& exponent) {
    const Expr normal = exponent + bit_and(shr(b, 22), 1);
    const Expr subnormal = select(b >= make_const(i32, 0x600000), make_const(i32, 1), make_const(i32, 0));
    const Expr code = select(exponent == make_const(i32, 0), subnormal, normal);
    const Expr special = logical_or(logical_not(v > constant(v, 0)), v > constant(v, FLT_MAX));
    return select(special, make_const(i32, 0xFF), code);
  });
}

Expr decode_bfloat16(const Expr& storage /* uint16 */) {
  const DataType u32 = runtime::DataType::UInt(32, storage.type().lanes);
  return float_of_bits(shl(cast(u32, storage), 16));
}

Expr encode_bfloat16(const Expr& v) {
  const DataType u32 = runtime::DataType::UInt(32, v.type().lanes);
  const Expr b = reinterpret(u32, v);
  const Expr rounded = shr(b + make_const(u32, 0x7FFF) + bit_and(shr(b, 16), 1), 16);
  const Expr quiet_nan = bit_or(bit_and(shr(b, 16), 0x8000), make_const(u32, 0x7FC0));  // as ml_dtypes
  return select(call(Intrinsic::isnan, {v}), quiet_nan, rounded);
}

// A narrow integer's compute value from the low bits of its uint8 storage.
Expr decode_narrow_int(DataType t, const Expr& storage) {
  const int shift = 8 - t.bits;
  if (t.is_uint()) return bit_and(storage, (1 << t.bits) - 1);
  return shr(reinterpret(runtime::DataType::Int(8, storage.type().lanes), shl(storage, shift)), shift);
}

// The uint8 storage of `v` (any number type) as narrow integer type `t`: floats truncate and
// become 0 out of range (as ml_dtypes converts); integers wrap.
Expr encode_narrow_int(DataType t, const Expr& v) {
  const DataType u8 = runtime::DataType::UInt(8, v.type().lanes);
  Expr wrapped;
  if (v.type().is_float()) {
    const Expr truncated = call(Intrinsic::trunc, {v});
    const Expr in_range = logical_and(truncated >= constant(v, t.min_value()), truncated <= constant(v, t.max_value()));
    wrapped = cast(u8, select(in_range, cast(t.compute_type().with_lanes(v.type().lanes), truncated),
                              make_const(t.compute_type().with_lanes(v.type().lanes), 0)));
  } else {
    wrapped = cast(u8, v);
  }
  return bit_and(wrapped, (1 << t.bits) - 1);
}

}  // namespace

Expr decode_narrow(const Expr& bits) {
  const DataType t = bits.type();
  if (!t.is_narrow()) fail("decode_narrow: ", t.str(), " is not a narrow type");
  const Expr storage = reinterpret(t.storage_type(), bits);
  if (!t.is_narrow_float()) return decode_narrow_int(t.element(), storage);
  if (t.code == TypeCode::BFloat) return decode_bfloat16(storage);
  return bound(cast(runtime::kInt32.with_lanes(t.lanes), storage), "code", [&](const Expr& code) {
    return t.code == TypeCode::Float8E8M0FNU ? decode_e8m0(code)
                                             : decode_small_float(runtime::narrow_float_format(t), code);
  });
}

Expr encode_narrow(const Expr& value, DataType type) {
  const DataType t = type.with_lanes(value.type().lanes);
  if (!t.is_narrow()) fail("encode_narrow: ", type.str(), " is not a narrow type");
  if (value.type().is_handle()) fail("encode_narrow: cannot convert a handle to ", type.str());
  Expr storage;
  if (!t.is_narrow_float()) {
    storage = encode_narrow_int(t, value);
  } else {
    storage = bound(cast(runtime::kFloat32.with_lanes(t.lanes), value), "value", [&](const Expr& v) {
      if (t.code == TypeCode::BFloat) return cast(t.storage_type(), encode_bfloat16(v));
      if (t.code == TypeCode::Float8E8M0FNU) return cast(t.storage_type(), encode_e8m0(v));
      return cast(t.storage_type(), encode_small_float(runtime::narrow_float_format(t), v));
    });
  }
  return reinterpret(t, storage);
}

namespace {

class NarrowTypeLowering : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Load* op) override {
    Expr load = IRMutator::mutate_(op);
    return op->type.is_narrow() ? decode_narrow(load) : load;
  }

  Stmt mutate_(const Store* op) override {
    if (!op->buffer.dtype().is_narrow()) return IRMutator::mutate_(op);
    const Expr index = mutate(op->index);
    // Stored as converted: a store encodes anyway.
    if (const auto* c = op->value.as<Cast>(); c && c->type.element() == op->buffer.dtype())
      return Store::make(op->buffer, encode_narrow(mutate(c->value), op->buffer.dtype()), index);
    if (Expr bits = moved_bits(op->value, op->buffer.dtype()); bits.defined())
      return Store::make(op->buffer, bits, index);
    return Store::make(op->buffer, encode_narrow(mutate(op->value), op->buffer.dtype()), index);
  }

  // `e` as bits of narrow type `t` when it only chooses among loads of `t` and constants (a copy,
  // a concatenation, padding): they are moved as they are, NaN payloads included. Else undefined.
  Expr moved_bits(const Expr& e, DataType t) {
    if (const auto* load = e.as<Load>(); load && load->buffer.dtype() == t)
      return Load::make(load->buffer, mutate(load->index));
    if (const auto* s = e.as<Select>()) {
      Expr a = moved_bits(s->true_value, t), b = a.defined() ? moved_bits(s->false_value, t) : Expr();
      if (b.defined()) return Select::make(mutate(s->condition), a, b);
    }
    if (const auto* let = e.as<Let>()) {  // a compute definition's shared operand
      Expr value = moved_bits(let->value, t);
      if (!value.defined()) return Expr();
      moved_vars_.insert(let->var.get());
      Expr body = moved_bits(let->body, t);
      moved_vars_.erase(let->var.get());
      return body.defined() ? Let::make(let->var, value, body) : Expr();
    }
    if (const auto* var = e.as<VarNode>(); var && moved_vars_.count(var)) return e;
    if (e.as<FloatImm>() || e.as<IntImm>()) return encode_narrow(mutate(e), t);
    return Expr();
  }

  Expr mutate_(const Cast* op) override {
    const Expr value = mutate(op->value);
    if (op->type.is_narrow()) return decode_narrow(encode_narrow(value, op->type));
    return cast(op->type, value);
  }

  Expr mutate_(const Call* op) override {
    if (op->op == Intrinsic::reinterpret) {
      const Expr x = mutate(op->args[0]);
      const Expr bits = op->args[0].type().is_narrow() ? encode_narrow(x, op->args[0].type()) : x;
      const Expr r = Call::make(op->type, Intrinsic::reinterpret, {bits});
      return op->type.is_narrow() ? decode_narrow(r) : r;
    }
    if (!op->type.is_narrow()) return IRMutator::mutate_(op);
    std::vector<Expr> args;
    for (const Expr& a : op->args) args.push_back(mutate(a));
    return Call::make(op->type.compute_type(), op->op, args);
  }

  Expr mutate_(const IntImm* op) override {
    if (!op->type.is_narrow()) return IRMutator::mutate_(op);
    return make_const(op->type.compute_type(), static_cast<double>(op->value));
  }
  Expr mutate_(const FloatImm* op) override {
    if (!op->type.is_narrow()) return IRMutator::mutate_(op);
    return decode_narrow(encode_narrow(make_const(runtime::kFloat32, op->value), op->type));
  }

  Expr mutate_(const VarNode* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? IRMutator::mutate_(op) : it->second;
  }
  Expr mutate_(const Let* op) override {
    const Expr value = mutate(op->value);
    const Var var = rebind(op->var, value);
    return Let::make(var, value, mutate(op->body));
  }
  Stmt mutate_(const LetStmt* op) override {
    const Expr value = mutate(op->value);
    const Var var = rebind(op->var, value);
    return LetStmt::make(var, value, mutate(op->body));
  }

 private:
  // A variable bound to a narrow value becomes one of its compute type.
  Var rebind(const Var& var, const Expr& value) {
    if (!var.type().is_narrow()) return var;
    Var wide(var.name(), value.type());
    vars_[var.get()] = wide;
    return wide;
  }

  std::unordered_map<const VarNode*, Var> vars_;
  std::unordered_set<const VarNode*> moved_vars_;  // bound to moved bits (moved_bits)
};

}  // namespace

Stmt lower_narrow_types(const Stmt& s) { return NarrowTypeLowering().mutate(s); }

}  // namespace tessera::tensor_ir
