#include "tensor_ir/arith/interval.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "runtime/error.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir::arith {

Interval Interval::from_range(const Range& r) { return {simplify(r.min), simplify(r.min + r.extent - 1)}; }

Range Interval::to_range() const {
  if (!bounded()) fail("internal error: an unbounded interval has no range");
  return Range(min, simplify(max - min + 1));
}

Interval union_of(const Interval& a, const Interval& b) {
  Expr lo = a.min && b.min ? simplify(tensor_ir::min(a.min, b.min)) : Expr();
  Expr hi = a.max && b.max ? simplify(tensor_ir::max(a.max, b.max)) : Expr();
  return {lo, hi};
}

Interval intersect(const Interval& a, const Interval& b) {
  Expr lo = !a.min ? b.min : !b.min ? a.min : simplify(tensor_ir::max(a.min, b.min));
  Expr hi = !a.max ? b.max : !b.max ? a.max : simplify(tensor_ir::min(a.max, b.max));
  return {lo, hi};
}

namespace {

class Evaluator {
 public:
  explicit Evaluator(const IntervalMap& dom) : dom_(dom) {}

  Interval eval(const Expr& e) {
    if (!depends_on_domain(e)) return Interval::point(simplify(e));
    if (const auto* v = e.as<VarNode>()) return dom_.at(v);
    if (const auto* op = e.as<Add>()) return combine(eval(op->a), eval(op->b), [](Expr x, Expr y) { return x + y; });
    if (const auto* op = e.as<Sub>()) {
      Interval a = eval(op->a), b = eval(op->b);
      return {a.min && b.max ? simplify(a.min - b.max) : Expr(), a.max && b.min ? simplify(a.max - b.min) : Expr()};
    }
    if (const auto* op = e.as<Mul>()) return mul(op->a, op->b);
    if (const auto* op = e.as<FloorDiv>()) return div(op->a, op->b);
    if (const auto* op = e.as<Div>()) {
      // Truncation agrees with flooring when the dividend cannot be negative.
      Interval a = eval(op->a);
      if (a.min && can_prove(a.min >= 0)) return div(op->a, op->b);
      return {};
    }
    if (const auto* op = e.as<FloorMod>()) return mod(op->a, op->b);
    if (const auto* op = e.as<Min>()) {
      Interval a = eval(op->a), b = eval(op->b);
      return {a.min && b.min ? simplify(tensor_ir::min(a.min, b.min)) : Expr(),
              !a.max   ? b.max
              : !b.max ? a.max
                       : simplify(tensor_ir::min(a.max, b.max))};
    }
    if (const auto* op = e.as<Max>()) {
      Interval a = eval(op->a), b = eval(op->b);
      return {!a.min   ? b.min
              : !b.min ? a.min
                       : simplify(tensor_ir::max(a.min, b.min)),
              a.max && b.max ? simplify(tensor_ir::max(a.max, b.max)) : Expr()};
    }
    if (const auto* op = e.as<Select>()) return union_of(eval(op->true_value), eval(op->false_value));
    if (const auto* op = e.as<Cast>()) {
      if (op->value.type().is_integer() && op->type.is_integer() && op->type.bits >= op->value.type().bits) {
        Interval v = eval(op->value);
        return {v.min ? simplify(cast(op->type, v.min)) : Expr(), v.max ? simplify(cast(op->type, v.max)) : Expr()};
      }
      return {};
    }
    if (const auto* op = e.as<Let>()) {
      IntervalMap inner = dom_;
      inner[op->var.get()] = eval(op->value);
      return Evaluator(inner).eval(op->body);
    }
    return {};
  }

 private:
  template <typename F>
  Interval combine(const Interval& a, const Interval& b, F f) {
    return {a.min && b.min ? simplify(f(a.min, b.min)) : Expr(), a.max && b.max ? simplify(f(a.max, b.max)) : Expr()};
  }

  Interval mul(const Expr& ea, const Expr& eb) {
    Interval a = eval(ea), b = eval(eb);
    const int64_t* cb = as_const_int(b.min);
    if (cb && b.min.same_as(b.max)) return scale(a, *cb);
    const int64_t* ca = as_const_int(a.min);
    if (ca && a.min.same_as(a.max)) return scale(b, *ca);
    // A symbolic size (the stride of a fused or flattened symbolic dimension) keeps the order.
    if (!depends_on_domain(eb) && nonnegative(eb)) return scale(a, eb);
    if (!depends_on_domain(ea) && nonnegative(ea)) return scale(b, ea);
    return {};
  }

  // Whether `e` is a positive multiple of a product of variables: the variables an interval does
  // not range over are sizes and loop indices, never negative.
  static bool nonnegative(const Expr& e) {
    int64_t coefficient = 1;
    std::vector<Expr> rest;
    factors(e, coefficient, rest);
    return coefficient > 0 && std::all_of(rest.begin(), rest.end(), [](const Expr& f) { return f.as<VarNode>(); });
  }

  Interval scale(const Interval& a, const Expr& k) {
    return {a.min ? simplify(a.min * k) : Expr(), a.max ? simplify(a.max * k) : Expr()};
  }

  Interval scale(const Interval& a, int64_t c) {
    Expr k = IntImm::make(a.min ? a.min.type() : kIndexType, c);
    Interval r{a.min ? simplify(a.min * k) : Expr(), a.max ? simplify(a.max * k) : Expr()};
    if (c < 0) std::swap(r.min, r.max);
    return r;
  }

  Interval div(const Expr& ea, const Expr& eb) {
    Interval a = eval(ea), b = eval(eb);
    const int64_t* c = as_const_int(b.min);
    if (!c && !depends_on_domain(eb)) return symbolic_div(a, eb);
    if (!c || !b.min.same_as(b.max) || *c <= 0) return {};
    return {a.min ? simplify(floordiv(a.min, b.min)) : Expr(), a.max ? simplify(floordiv(a.max, b.min)) : Expr()};
  }

  Interval mod(const Expr& ea, const Expr& eb) {
    Interval a = eval(ea), b = eval(eb);
    const int64_t* c = as_const_int(b.min);
    // A symbolic divisor (a loop fused with one of symbolic extent): a remainder lies below it.
    if (!c && !depends_on_domain(eb))
      return {make_zero(ea.type()), a.min && can_prove(a.min >= 0) ? simplify(eb - 1) : Expr()};
    if (!c || !b.min.same_as(b.max) || *c <= 0) return {};
    // When the whole interval lies in one block of c, the remainder is exact.
    if (a.bounded() && can_prove(floordiv(a.min, b.min) == floordiv(a.max, b.min)))
      return {simplify(floormod(a.min, b.min)), simplify(floormod(a.max, b.min))};
    return {make_zero(ea.type()), IntImm::make(ea.type(), *c - 1)};
  }

  // x // d for a symbolic d, when x ranges over [0, d * q - 1] (a loop of extent d * q, fused
  // over one of extent d): [0, q - 1]. A size d of 0 leaves such a loop without iterations, so
  // its bounds are never used. Otherwise unbounded.
  Interval symbolic_div(const Interval& a, const Expr& d) {
    if (!a.bounded() || !can_prove(a.min >= 0)) return {};
    std::optional<Expr> q = arith::exact_quotient(simplify(a.max + 1), simplify(d));
    if (!q) return {};
    return {is_zero(a.min) ? a.min : Expr(), simplify(*q - 1)};
  }

  // The factors of a product: its constant coefficient and the other factors.
  static void factors(const Expr& e, int64_t& coefficient, std::vector<Expr>& rest) {
    if (const auto* m = e.as<Mul>()) {
      factors(m->a, coefficient, rest);
      factors(m->b, coefficient, rest);
    } else if (const int64_t* c = as_const_int(e)) {
      coefficient *= *c;
    } else {
      rest.push_back(e);
    }
  }

  bool depends_on_domain(const Expr& e) {
    for (const auto& [var, interval] : dom_)
      if (uses_var(e, var)) return true;
    return false;
  }

  const IntervalMap& dom_;
};

}  // namespace

Interval eval_interval(const Expr& e, const IntervalMap& dom) { return Evaluator(dom).eval(e); }

}  // namespace tessera::tensor_ir::arith
