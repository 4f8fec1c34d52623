#include "tensor_ir/ops/math.h"

#include "tensor_ir/dimension_must_equal.h"

#include <algorithm>
#include <limits>

#include "runtime/error.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"

namespace tessera::tensor_ir::ops {

namespace ti = tessera::tensor_ir;

std::vector<Expr> broadcast_indices(const Tensor& t, const std::vector<Var>& out) {
  std::vector<Expr> idx;
  size_t offset = out.size() - t.ndim();
  for (size_t d = 0; d < t.ndim(); ++d) idx.push_back(is_const_int(t->shape[d], 1) ? Expr(0) : Expr(out[offset + d]));
  return idx;
}

std::vector<Expr> broadcast_shape(const std::vector<Tensor>& ts) {
  size_t n = 0;
  for (const auto& t : ts) n = std::max(n, t.ndim());
  std::vector<Expr> shape;
  // A symbolic dimension broadcasts against 1 or the same expression only, or one equal where
  // some variables are at least 1 (x[-L:] against L), which the graph checks at each call
  // (relay_ir's broadcast_shapes); the result then has the simpler one.
  for (size_t i = 0; i < n; ++i) {
    Expr out = 1;
    for (const auto& t : ts) {
      Expr x = i < n - t.ndim() ? Expr(1) : t->shape[i - (n - t.ndim())];
      if (is_const_int(x, 1)) continue;
      if (!is_const_int(out, 1) && !structural_equal(x, out) && !same_dimension(x, out)) {
        if (!same_dimension_where_positive(x, out)) {
          std::string names;
          for (const auto& u : ts) names += (names.empty() ? "" : ", ") + u.name();
          fail("broadcast of ", names, ": dimension ", i, " is ", to_string(out), " vs ", to_string(x));
        }
        x = simpler_dimension(x, out);
      }
      out = x;
    }
    shape.push_back(out);
  }
  return shape;
}

std::vector<Expr> broadcast_shape(const Tensor& a, const Tensor& b) {
  return broadcast_shape(std::vector<Tensor>{a, b});
}

Tensor map(const Tensor& x, const std::function<Expr(Expr)>& f, const std::string& name) {
  return compute(
      x->shape, [&](const std::vector<Var>& i) { return f(x(std::vector<Expr>(i.begin(), i.end()))); }, name,
      "elemwise");
}

Tensor map2(const Tensor& a, const Tensor& b, const std::function<Expr(Expr, Expr)>& f, const std::string& name) {
  return compute(
      broadcast_shape(a, b),
      [&](const std::vector<Var>& i) { return f(a(broadcast_indices(a, i)), b(broadcast_indices(b, i))); }, name,
      "broadcast");
}

Expr let(Expr value, const std::function<Expr(Expr)>& body) {
  Var v("v", value.type());
  return Let::make(v, value, body(v));
}

Expr nan_max(Expr a, Expr b) {
  if (!a.type().is_float()) return max(a, b);
  // select(a < b, b, a) keeps a NaN a; the outer select a NaN b.
  return let(a, [&](Expr x) {
    return let(b, [&](Expr y) { return select(ti::call(Intrinsic::isnan, {y}), y, select(x < y, y, x)); });
  });
}

Expr nan_min(Expr a, Expr b) {
  if (!a.type().is_float()) return min(a, b);
  return let(a, [&](Expr x) {
    return let(b, [&](Expr y) { return select(ti::call(Intrinsic::isnan, {y}), y, select(y < x, y, x)); });
  });
}

Expr safe_div(Expr a, Expr b) {
  if (a.type().is_float()) return a / b;
  DataType t = a.type();
  Expr zero = make_zero(t);
  return let(a, [&](Expr x) {
    return let(b, [&](Expr y) {
      if (t.is_uint()) return select(y == zero, zero, x / select(y == zero, make_one(t), y));
      // x86 traps on division by zero and on MIN / -1; the divisor of those lanes becomes 1.
      Expr minus_one = make_const(t, -1);
      Expr special = logical_or(y == zero, y == minus_one);
      Expr q = x / select(special, make_one(t), y);
      // MIN / -1 wraps to MIN (numpy); -MIN itself would be poison where LLVM assumes no overflow.
      Expr negated = select(x == make_const(t, t.min_value()), x, zero - x);
      return select(y == zero, zero, select(y == minus_one, negated, q));
    });
  });
}

Expr int_pow(Expr base, Expr exponent) {
  DataType t = base.type();
  // Binary exponentiation over every exponent bit, unrolled: squaring wraps like numpy's power.
  int bits = t.is_int() ? t.bits - 1 : t.bits;
  return let(base, [&](Expr b) {
    return let(exponent, [&](Expr e) {
      std::function<Expr(int, Expr, Expr)> step = [&](int k, Expr result, Expr square) -> Expr {
        if (k == bits) return result;
        Expr bit =
            ti::call(Intrinsic::bitwise_and, {ti::call(Intrinsic::shift_right, {e, make_const(t, k)}), make_one(t)});
        return let(select(bit != make_zero(t), result * square, result), [&](Expr r) {
          if (k + 1 == bits) return r;
          return let(square * square, [&](Expr s) { return step(k + 1, r, s); });
        });
      };
      Expr positive = step(0, make_one(t), b);
      if (t.is_uint()) return positive;
      // b^-n truncates to 0 unless |b| == 1.
      Expr odd = ti::call(Intrinsic::bitwise_and, {e, make_one(t)}) != make_zero(t);
      Expr negative = select(b == make_one(t), make_one(t),
                             select(b == make_const(t, -1), select(odd, make_const(t, -1), make_one(t)), make_zero(t)));
      return select(e < make_zero(t), negative, positive);
    });
  });
}

namespace {

void require_float(const Tensor& x, const char* op) {
  if (!x.dtype().is_float()) fail(op, ": ", x.name(), " must be a float tensor, got ", x.dtype().str());
}

void require_numeric(const Tensor& x, const char* op) {
  if (x.dtype().is_bool()) fail(op, ": ", x.name(), " must be numeric, got bool");
}

void require_same(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    fail(op, ": dtypes differ: ", a.name(), " is ", a.dtype().str(), ", ", b.name(), " is ", b.dtype().str());
}

Tensor compare(const Tensor& a, const Tensor& b, const char* name, Expr (*f)(Expr, Expr)) {
  require_same(a, b, name);
  return map2(a, b, f, name);
}

}  // namespace

// --- unary ---------------------------------------------------------------------------------

Tensor relu(const Tensor& x) {
  require_numeric(x, "relu");
  // select(x < 0, 0, x) is maxps(0, x), which passes a NaN x through.
  return map(
      x, [&](Expr v) { return select(v < make_zero(x.dtype()), make_zero(x.dtype()), v); }, "relu");
}

Tensor neg(const Tensor& x) {
  require_numeric(x, "neg");
  return map(
      x, [&](Expr v) { return make_zero(x.dtype()) - v; }, "neg");
}

Tensor abs(const Tensor& x) {
  require_numeric(x, "abs");
  return map(
      x, [](Expr v) { return ti::abs(v); }, "abs");
}

Tensor reciprocal(const Tensor& x) {
  require_float(x, "reciprocal");
  return map(
      x, [&](Expr v) { return make_one(x.dtype()) / v; }, "reciprocal");
}

Tensor sign(const Tensor& x) {
  require_numeric(x, "sign");
  DataType t = x.dtype();
  return map(
      x,
      [&](Expr v) {
        Expr zero = make_zero(t);
        if (t.is_uint()) return select(v > zero, make_one(t), zero);
        // The last `v` keeps zeros and NaN as they are.
        return select(v > zero, make_one(t), select(v < zero, make_const(t, -1), t.is_float() ? v : zero));
      },
      "sign");
}

Tensor unary_intrinsic(const Tensor& x, Intrinsic op) {
  const char* name = intrinsic_name(op);
  require_float(x, name);
  return map(
      x, [&](Expr v) { return ti::call(op, {v}); }, name);
}

Tensor isnan(const Tensor& x) {
  require_float(x, "isnan");
  return map(
      x, [](Expr v) { return ti::call(Intrinsic::isnan, {v}); }, "isnan");
}

Tensor isinf(const Tensor& x, bool detect_positive, bool detect_negative) {
  require_float(x, "isinf");
  return map(
      x,
      [&](Expr v) {
        if (detect_positive && detect_negative) return ti::call(Intrinsic::isinf, {v});
        double inf = std::numeric_limits<double>::infinity();
        if (detect_positive) return v == make_const(x.dtype(), inf);
        if (detect_negative) return v == make_const(x.dtype(), -inf);
        // Always false, but reading v: a kernel must read its input (x != x and x == x never both hold).
        return ti::logical_and(v != v, v == v);
      },
      "isinf");
}

Tensor logical_not(const Tensor& x) {
  if (!x.dtype().is_bool()) fail("logical_not: ", x.name(), " must be bool, got ", x.dtype().str());
  return map(
      x, [](Expr v) { return ti::logical_not(v); }, "logical_not");
}

Tensor bitwise_not(const Tensor& x) {
  if (!x.dtype().is_integer()) fail("bitwise_not: ", x.name(), " must be an integer tensor, got ", x.dtype().str());
  return map(
      x, [](Expr v) { return ti::call(Intrinsic::bitwise_not, {v}); }, "bitwise_not");
}

Tensor cast(const Tensor& x, DataType dtype) {
  return map(
      x, [&](Expr v) { return ti::cast(dtype, v); }, "cast");
}

Tensor bitcast(const Tensor& x, DataType dtype) {
  auto width = [](DataType t) { return t.is_bool() ? 8 : t.bits; };
  if (width(x.dtype()) != width(dtype) || !dtype.is_scalar() || dtype.is_handle())
    fail("bitcast: cannot read the bits of ", x.dtype().str(), " as ", dtype.str(), " (their widths differ)");
  const DataType u8 = DataType::UInt(8);
  return map(
      x,
      [&](Expr v) {
        if (v.type().is_bool()) v = ti::cast(u8, v);
        if (dtype.is_bool()) return ti::cast(dtype, Call::make(u8, Intrinsic::reinterpret, {v}));
        return v.type() == dtype ? v : Call::make(dtype, Intrinsic::reinterpret, {v});
      },
      "bitcast");
}

// --- binary --------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  require_same(a, b, "add");
  require_numeric(a, "add");
  return map2(
      a, b, [](Expr x, Expr y) { return x + y; }, "add");
}

Tensor sub(const Tensor& a, const Tensor& b) {
  require_same(a, b, "sub");
  require_numeric(a, "sub");
  return map2(
      a, b, [](Expr x, Expr y) { return x - y; }, "sub");
}

Tensor mul(const Tensor& a, const Tensor& b) {
  require_same(a, b, "mul");
  require_numeric(a, "mul");
  return map2(
      a, b, [](Expr x, Expr y) { return x * y; }, "mul");
}

Tensor div(const Tensor& a, const Tensor& b) {
  require_same(a, b, "div");
  require_numeric(a, "div");
  return map2(a, b, safe_div, "div");
}

Tensor pow(const Tensor& a, const Tensor& b) {
  require_same(a, b, "pow");
  require_numeric(a, "pow");
  if (a.dtype().is_float())
    return map2(
        a, b,
        [](Expr x, Expr y) {
          return ti::call(Intrinsic::pow, {x, y});
        },
        "pow");
  return map2(a, b, int_pow, "pow");
}

Tensor mod(const Tensor& a, const Tensor& b, bool fmod) {
  require_same(a, b, "mod");
  require_numeric(a, "mod");
  DataType t = a.dtype();
  return map2(
      a, b,
      [&](Expr x, Expr y) {
        Expr zero = make_zero(t);
        if (t.is_float()) {
          if (fmod) return x % y;
          // numpy's float remainder: fmod, moved into the divisor's sign.
          return let(y, [&](Expr d) {
            return let(x % d,
                       [&](Expr r) { return select(logical_and(r != zero, (r < zero) != (d < zero)), r + d, r); });
          });
        }
        return let(y, [&](Expr d) {
          // Remainders by 0 are 0 (numpy); by -1 always 0, and x86 traps on MIN % -1.
          Expr special = t.is_uint() ? (d == zero) : logical_or(d == zero, d == make_const(t, -1));
          Expr safe = select(special, make_one(t), d);
          return select(special, zero, fmod ? x % safe : floormod(x, safe));
        });
      },
      "mod");
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  require_same(a, b, "maximum");
  require_numeric(a, "maximum");
  return map2(a, b, nan_max, "maximum");
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  require_same(a, b, "minimum");
  require_numeric(a, "minimum");
  return map2(a, b, nan_min, "minimum");
}

Tensor equal(const Tensor& a, const Tensor& b) {
  return compare(a, b, "equal", [](Expr x, Expr y) { return x == y; });
}
Tensor less(const Tensor& a, const Tensor& b) {
  return compare(a, b, "less", [](Expr x, Expr y) { return x < y; });
}
Tensor less_equal(const Tensor& a, const Tensor& b) {
  return compare(a, b, "less_equal", [](Expr x, Expr y) { return x <= y; });
}
Tensor greater(const Tensor& a, const Tensor& b) {
  return compare(a, b, "greater", [](Expr x, Expr y) { return x > y; });
}
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return compare(a, b, "greater_equal", [](Expr x, Expr y) { return x >= y; });
}

namespace {
Tensor logical(const Tensor& a, const Tensor& b, const char* name, Expr (*f)(Expr, Expr)) {
  require_same(a, b, name);
  if (!a.dtype().is_bool()) fail(name, ": operands must be bool, got ", a.dtype().str());
  return map2(a, b, f, name);
}

Tensor bitwise(const Tensor& a, const Tensor& b, const char* name, Intrinsic op) {
  require_same(a, b, name);
  if (!a.dtype().is_integer()) fail(name, ": operands must be integers, got ", a.dtype().str());
  return map2(
      a, b,
      [&](Expr x, Expr y) {
        return ti::call(op, {x, y});
      },
      name);
}

Tensor shift(const Tensor& a, const Tensor& b, const char* name, Intrinsic op) {
  require_same(a, b, name);
  if (!a.dtype().is_uint()) fail(name, ": operands must be unsigned integers, got ", a.dtype().str());
  DataType t = a.dtype();
  return map2(
      a, b,
      [&](Expr x, Expr y) {
        // LLVM leaves shifts by the bit width or more undefined; numpy gives 0.
        return let(y, [&](Expr s) {
          Expr wide = s >= make_const(t, t.bits);
          return select(wide, make_zero(t), ti::call(op, {x, select(wide, make_zero(t), s)}));
        });
      },
      name);
}
}  // namespace

Tensor logical_and(const Tensor& a, const Tensor& b) { return logical(a, b, "logical_and", ti::logical_and); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return logical(a, b, "logical_or", ti::logical_or); }
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return logical(a, b, "logical_xor", [](Expr x, Expr y) { return x != y; });
}
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return bitwise(a, b, "bitwise_and", Intrinsic::bitwise_and); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return bitwise(a, b, "bitwise_or", Intrinsic::bitwise_or); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return bitwise(a, b, "bitwise_xor", Intrinsic::bitwise_xor); }
Tensor left_shift(const Tensor& a, const Tensor& b) { return shift(a, b, "left_shift", Intrinsic::shift_left); }
Tensor right_shift(const Tensor& a, const Tensor& b) { return shift(a, b, "right_shift", Intrinsic::shift_right); }

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  if (!condition.dtype().is_bool())
    fail("where: condition ", condition.name(), " must be bool, got ", condition.dtype().str());
  require_same(x, y, "where");
  return compute(
      broadcast_shape({condition, x, y}),
      [&](const std::vector<Var>& i) {
        // Both sides are read unconditionally (they are whole tensors), so the select can blend.
        return let(x(broadcast_indices(x, i)), [&](Expr xv) {
          return let(y(broadcast_indices(y, i)),
                     [&](Expr yv) { return select(condition(broadcast_indices(condition, i)), xv, yv); });
        });
      },
      "where", "broadcast");
}

}  // namespace tessera::tensor_ir::ops
