#include "tensor_ir/arith/simplify.h"

#include <algorithm>
#include <type_traits>
#include <cmath>
#include <numeric>
#include <optional>

#include "tensor_ir/arith/linear_form.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir::arith {

namespace {

bool is_scalar_int(const Expr& e) { return e.type().is_integer() && e.type().is_scalar(); }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = wrapping_div(a, b);
  return (wrapping_rem(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return wrapping_sub(a, wrapping_mul(floor_div(a, b), b)); }

// Rounds a folded float constant to its type, so folding matches run-time arithmetic.
double round_to(DataType t, double v) { return t.bits == 32 ? double(float(v)) : v; }

// The scalar a vector constant repeats, or the scalar itself.
Expr scalar_of(const Expr& e) {
  const auto* b = e.as<Broadcast>();
  return b ? b->value : e;
}

class Simplifier : public IRMutator {
 public:
  explicit Simplifier(BoundMap vars) : vars_(std::move(vars)) {}
  using IRMutator::mutate;

 protected:
  ConstBound bound(const Expr& e) { return const_bound(e, vars_); }

  // The range of a - b (scalar signed integers). Where floor divisions leave it open, also that of
  // the difference with its multiples of quotients expanded (LinearForm), where they may cancel:
  // a tile of 14 rows ends inside M rows rounded up to 7s.
  ConstBound difference_bound(const Expr& a, const Expr& b) {
    const Expr d = mutate(Sub::make(a, b));
    ConstBound r = bound(d);
    if (r.bounded()) return r;
    LinearForm f = to_linear_form(d);
    if (!f.expand_multiples_of_quotients()) return r;
    const ConstBound e = bound(f.to_expr());
    return {std::max(r.min, e.min), std::min(r.max, e.max)};
  }

  // Runs f with `var` known to lie in `b`, restoring what was known before.
  template <typename F>
  auto with_bound(const VarNode* var, ConstBound b, F&& f) {
    auto saved = vars_.find(var) != vars_.end() ? std::optional<ConstBound>(vars_[var]) : std::nullopt;
    vars_[var] = b;
    auto result = f();
    if (saved) vars_[var] = *saved;
    else vars_.erase(var);
    return result;
  }

  // --- arithmetic ----------------------------------------------------------------------
  // Folds `a op b` when both are scalar constants; returns an undefined Expr otherwise.
  template <typename IntOp, typename FloatOp>
  Expr fold(const Expr& a, const Expr& b, IntOp int_op, FloatOp float_op) {
    if (a.type().is_vector()) {
      const auto* ba = a.as<Broadcast>();
      const auto* bb = b.as<Broadcast>();
      if (!ba || !bb) return Expr();
      Expr s = fold(ba->value, bb->value, int_op, float_op);
      return s ? Broadcast::make(s, ba->lanes) : Expr();
    }
    if (const int64_t* x = as_const_int(a)) {
      if (const int64_t* y = as_const_int(b)) {
        auto r = int_op(*x, *y);
        if (!r) return Expr();
        return IntImm::make(a.type(), wrap_to_type(a.type(), *r));
      }
    }
    if (const double* x = as_const_float(a)) {
      if (const double* y = as_const_float(b)) return FloatImm::make(a.type(), round_to(a.type(), float_op(*x, *y)));
    }
    return Expr();
  }

  // Vector index algebra: ramps and broadcasts combine into ramps and broadcasts.
  Expr vector_arith(NodeKind kind, const Expr& a, const Expr& b) {
    const auto* ra = a.as<Ramp>();
    const auto* rb = b.as<Ramp>();
    const auto* ba = a.as<Broadcast>();
    const auto* bb = b.as<Broadcast>();
    auto ramp = [&](Expr base, Expr stride, int64_t lanes) { return mutate(Ramp::make(base, stride, lanes)); };
    switch (kind) {
      case NodeKind::Add:
        if (ra && rb) return ramp(ra->base + rb->base, ra->stride + rb->stride, ra->lanes);
        if (ra && bb) return ramp(ra->base + bb->value, ra->stride, ra->lanes);
        if (ba && rb) return ramp(ba->value + rb->base, rb->stride, rb->lanes);
        break;
      case NodeKind::Sub:
        if (ra && rb) return ramp(ra->base - rb->base, ra->stride - rb->stride, ra->lanes);
        if (ra && bb) return ramp(ra->base - bb->value, ra->stride, ra->lanes);
        if (ba && rb) return ramp(ba->value - rb->base, make_zero(rb->stride.type()) - rb->stride, rb->lanes);
        break;
      case NodeKind::Mul:
        if (ra && bb) return ramp(ra->base * bb->value, ra->stride * bb->value, ra->lanes);
        if (ba && rb) return ramp(ba->value * rb->base, ba->value * rb->stride, rb->lanes);
        break;
      default:
        break;
    }
    return Expr();
  }

  // Broadcast(x) op Broadcast(y) -> Broadcast(x op y), simplified as a scalar.
  template <typename Node>
  Expr broadcast_binary(const Expr& a, const Expr& b) {
    const auto* ba = a.as<Broadcast>();
    const auto* bb = b.as<Broadcast>();
    if (!ba || !bb) return Expr();
    return Broadcast::make(mutate(Node::make(ba->value, bb->value)), ba->lanes);
  }

  Expr linear(const Expr& e) {
    LinearForm f = to_linear_form(e);
    f.merge_div_mod_pairs();
    f.round_up_to_multiples();
    return f.to_expr();
  }

  Expr mutate_(const Add* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return std::optional<int64_t>(wrapping_add(x, y)); },
            [](double x, double y) { return x + y; }))
      return c;
    if (is_scalar_int(a)) return linear(Add::make(a, b));
    if (a.type().is_vector()) {
      if (Expr v = vector_arith(NodeKind::Add, a, b)) return v;
      if (Expr v = broadcast_binary<Add>(a, b)) return v;
    }
    if (is_zero(b) && a.type().is_float()) return a;
    if (is_zero(a) && a.type().is_float()) return b;
    return Add::make(a, b);
  }

  Expr mutate_(const Sub* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return std::optional<int64_t>(wrapping_sub(x, y)); },
            [](double x, double y) { return x - y; }))
      return c;
    if (is_scalar_int(a)) return linear(Sub::make(a, b));
    if (a.type().is_vector()) {
      if (Expr v = vector_arith(NodeKind::Sub, a, b)) return v;
      if (Expr v = broadcast_binary<Sub>(a, b)) return v;
    }
    if (is_zero(b) && a.type().is_float()) return a;
    return Sub::make(a, b);
  }

  Expr mutate_(const Mul* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return std::optional<int64_t>(wrapping_mul(x, y)); },
            [](double x, double y) { return x * y; }))
      return c;
    if (is_scalar_int(a)) {
      if (as_const_int(a) || as_const_int(b)) return linear(Mul::make(a, b));
      return Mul::make(a, b);
    }
    if (a.type().is_vector()) {
      if (Expr v = vector_arith(NodeKind::Mul, a, b)) return v;
      if (Expr v = broadcast_binary<Mul>(a, b)) return v;
    }
    if (is_one(b)) return a;
    if (is_one(a)) return b;
    return Mul::make(a, b);
  }

  Expr mutate_(const Div* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_scalar_int(a)) {
      // Truncation equals flooring for a non-negative dividend and positive divisor.
      const int64_t* c = as_const_int(b);
      if (c && *c > 0 && bound(a).min >= 0) return mutate(FloorDiv::make(a, b));
    }
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return y ? std::optional<int64_t>(wrapping_div(x, y)) : std::nullopt; },
            [](double x, double y) { return x / y; }))
      return c;
    if (is_one(b)) return a;
    if (Expr v = broadcast_binary<Div>(a, b)) return v;
    return Div::make(a, b);
  }

  Expr mutate_(const Mod* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_scalar_int(a)) {
      const int64_t* c = as_const_int(b);
      if (c && *c > 0 && bound(a).min >= 0) return mutate(FloorMod::make(a, b));
    }
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return y ? std::optional<int64_t>(wrapping_rem(x, y)) : std::nullopt; },
            [](double x, double y) { return std::fmod(x, y); }))
      return c;
    if (Expr v = broadcast_binary<Mod>(a, b)) return v;
    return Mod::make(a, b);
  }

  // Splits the linear form of `a` into multiples of c (divided out) and the rest.
  struct DivSplit {
    LinearForm quotient, rest;
  };
  DivSplit split_by(const Expr& a, int64_t c) {
    LinearForm f = to_linear_form(a);
    DivSplit s{LinearForm{f.type, {}, 0}, LinearForm{f.type, {}, 0}};
    for (const auto& [t, k] : f.terms) {
      if (k % c == 0) s.quotient.add_term(t, k / c);
      else s.rest.add_term(t, k);
    }
    s.quotient.constant = floor_div(f.constant, c);
    s.rest.constant = floor_mod(f.constant, c);
    return s;
  }

  // A symbolic divisor with a constant factor, b = d*c (c > 1, every coefficient of b a multiple
  // of c, d >= 0: a size, where 0 divides by zero either way), of a = q*c + r with 0 <= r < c:
  // a // b = q // d and a % b = (q % d)*c + r.
  // A row index over N*4 heads then divides once per row, not once per element: the merged rows
  // of [N*4, L, 64] -> [L, N*4, 64] are (i*4 + j // 64) // (N*4), which is i // N.
  struct FactorSplit {
    Expr quotient, remainder, divisor;
    int64_t factor;
    Expr floordiv() const { return FloorDiv::make(quotient, divisor); }  // a // b
    Expr floormod() const {                                              // a % b
      return Add::make(Mul::make(FloorMod::make(quotient, divisor), IntImm::make(quotient.type(), factor)), remainder);
    }
  };
  std::optional<FactorSplit> by_constant_factor(const Expr& a, const Expr& b) {
    if (!is_scalar_int(a) || !is_scalar_int(b)) return std::nullopt;
    const LinearForm fb = to_linear_form(b);
    const int64_t g = fb.common_factor();
    if (g <= 1 || fb.is_constant()) return std::nullopt;
    DivSplit sb = split_by(b, g);
    Expr divisor = sb.quotient.to_expr();
    if (bound(divisor).min < 0) return std::nullopt;
    return split_below(a, g, divisor);
  }

  // a as q*g + r with 0 <= r < g, to be divided by `divisor` (b / g); none when r may leave [0, g).
  std::optional<FactorSplit> split_below(const Expr& a, int64_t g, const Expr& divisor) {
    DivSplit s = split_by(a, g);
    Expr remainder = s.rest.to_expr();
    ConstBound rb = bound(remainder);
    if (!rb.bounded() || rb.min < 0 || rb.max >= g) return std::nullopt;
    return FactorSplit{s.quotient.to_expr(), remainder, divisor, g};
  }

  // A constant divisor c with a factor g (1 < g < c) that every term of `a` is a multiple of but
  // a remainder r within [0, g): a = q*g + r, so a // c = q // (c/g) and a % c = (q % (c/g))*g +
  // r. A reduction of 64 split by 4 reads (ko*4 + ki) // 64, which is ko // 16: once per ko, not
  // once per unrolled ki.
  std::optional<FactorSplit> by_factor_of_divisor(const Expr& a, int64_t c) {
    if (!is_scalar_int(a)) return std::nullopt;
    std::vector<int64_t> factors;
    for (const auto& [t, k] : to_linear_form(a).terms)
      if (int64_t g = std::gcd(k, c); g > 1 && g < c) factors.push_back(g);
    std::sort(factors.rbegin(), factors.rend());
    for (int64_t g : factors)
      if (auto split = split_below(a, g, IntImm::make(a.type(), c / g))) return split;
    return std::nullopt;
  }

  // Bounds of base % c: its own, tightened where base is a multiple of g (every coefficient and
  // the constant of its linear form are), so that the remainder is one too, at most c - gcd(g, c).
  // A row of a head of 64 starts at h*64 + k*16: a vector of 16 from there never crosses 256.
  ConstBound remainder_bound(const Expr& base, int64_t c) {
    ConstBound rem = bound(mutate(FloorMod::make(base, IntImm::make(base.type(), c))));
    const int64_t g = to_linear_form(base).common_factor();
    if (g > 0 && rem.bounded()) rem.max = std::min(rem.max, c - std::gcd(g, c));
    return rem;
  }

  Expr mutate_(const FloorDiv* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return y ? std::optional<int64_t>(floor_div(x, y)) : std::nullopt; },
            [](double x, double y) { return std::floor(x / y); }))
      return c;
    const int64_t* c = as_const_int(b);
    if (a.type().is_vector()) {
      const auto* r = a.as<Ramp>();
      const int64_t* stride = r ? as_const_int(r->stride) : nullptr;
      if (r && c && *c > 0 && stride && *stride >= 0) {
        Expr cs = scalar_of(b);
        if (*stride % *c == 0)
          return mutate(Ramp::make(FloorDiv::make(r->base, cs), IntImm::make(r->base.type(), *stride / *c), r->lanes));
        // All lanes fall in one block of c when the base's remainder leaves room for the ramp.
        ConstBound rem = remainder_bound(r->base, *c);
        if (rem.bounded() && rem.max + *stride * (r->lanes - 1) < *c)
          return Broadcast::make(mutate(FloorDiv::make(r->base, cs)), r->lanes);
      }
      if (Expr v = broadcast_binary<FloorDiv>(a, b)) return v;
      return FloorDiv::make(a, b);
    }
    if (!c) {
      if (auto split = by_constant_factor(a, b)) return mutate(split->floordiv());
      return FloorDiv::make(a, b);
    }
    if (*c <= 0) return FloorDiv::make(a, b);
    if (*c == 1) return a;
    if (const auto* inner = a.as<FloorDiv>()) {
      if (const int64_t* c2 = as_const_int(inner->b); c2 && *c2 > 0)
        return mutate(FloorDiv::make(inner->a, IntImm::make(a.type(), *c2 * *c)));
    }
    DivSplit s = split_by(a, *c);
    Expr rest = s.rest.to_expr();
    ConstBound rb = bound(rest);
    if (rb.bounded() && floor_div(rb.min, *c) == floor_div(rb.max, *c)) {
      s.quotient.constant = wrapping_add(s.quotient.constant, floor_div(rb.min, *c));
      return linear(s.quotient.to_expr());
    }
    Expr rest_div = FloorDiv::make(rest, b);
    if (auto split = by_factor_of_divisor(rest, *c)) rest_div = mutate(split->floordiv());
    if (s.quotient.is_constant() && s.quotient.constant == 0) return rest_div;
    LinearForm q = s.quotient;
    q.add_term(rest_div, 1);
    return q.to_expr();
  }

  // `a` with each term -(x % c)*k (k > 0) as -x*k: the same remainder modulo c ((8 - L % 8) % 8 is
  // (-L) % 8, which round_up_to_multiples recognizes). `a` itself when it has none. Positive terms
  // stay: (x % c)*k + ... is how split loops index, which merge_div_mod_pairs recognizes.
  static Expr without_inner_mods(const Expr& a, int64_t c) {
    if (!is_scalar_int(a)) return a;
    LinearForm f = to_linear_form(a);
    bool changed = false;
    for (auto& [term, k] : f.terms) {
      const auto* mod = term.as<FloorMod>();
      if (k < 0 && mod && is_const_int(mod->b, c)) {
        term = mod->a;
        changed = true;
      }
    }
    if (!changed) return a;
    LinearForm merged{f.type, {}, f.constant};
    for (const auto& [term, k] : f.terms) merged.add(to_linear_form(term), k);
    return merged.to_expr();
  }

  Expr mutate_(const FloorMod* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold(
            a, b, [](int64_t x, int64_t y) { return y ? std::optional<int64_t>(floor_mod(x, y)) : std::nullopt; },
            [](double x, double y) { return x - std::floor(x / y) * y; }))
      return c;
    const int64_t* c = as_const_int(b);
    if (a.type().is_vector()) {
      const auto* r = a.as<Ramp>();
      const int64_t* stride = r ? as_const_int(r->stride) : nullptr;
      if (r && c && *c > 0 && stride && *stride >= 0) {
        Expr cs = scalar_of(b);
        Expr base_mod = mutate(FloorMod::make(r->base, cs));
        if (*stride % *c == 0) return Broadcast::make(base_mod, r->lanes);
        ConstBound rem = remainder_bound(r->base, *c);
        if (rem.bounded() && rem.max + *stride * (r->lanes - 1) < *c)
          return mutate(Ramp::make(base_mod, r->stride, r->lanes));
      }
      if (Expr v = broadcast_binary<FloorMod>(a, b)) return v;
      return FloorMod::make(a, b);
    }
    if (!c) {
      if (auto split = by_constant_factor(a, b)) return mutate(split->floormod());
      return FloorMod::make(a, b);
    }
    if (*c <= 0) return FloorMod::make(a, b);
    if (*c == 1) return make_zero(a.type());
    if (const auto* inner = a.as<FloorMod>()) {
      if (const int64_t* c2 = as_const_int(inner->b); c2 && *c2 > 0 && *c2 % *c == 0)
        return mutate(FloorMod::make(inner->a, b));
    }
    if (Expr inner = without_inner_mods(a, *c); !inner.same_as(a)) return mutate(FloorMod::make(inner, b));
    DivSplit s = split_by(a, *c);
    Expr rest = s.rest.to_expr();
    ConstBound rb = bound(rest);
    if (rb.bounded() && floor_div(rb.min, *c) == floor_div(rb.max, *c)) {
      return linear(Sub::make(rest, IntImm::make(a.type(), floor_div(rb.min, *c) * *c)));
    }
    if (auto split = by_factor_of_divisor(rest, *c)) {
      return mutate(split->floormod());
    }
    return FloorMod::make(rest, b);
  }

  template <typename Node>
  Expr min_max(const Node* op, bool is_min) {
    Expr a = mutate(op->a), b = mutate(op->b);
    auto pick = [is_min](auto x, auto y) { return is_min ? std::min(x, y) : std::max(x, y); };
    if (Expr c = fold(
            a, b, [&](int64_t x, int64_t y) { return std::optional<int64_t>(pick(x, y)); },
            [&](double x, double y) { return pick(x, y); }))
      return c;
    if (structural_equal(a, b)) return a;
    if (a.type().is_integer()) {
      // Decide by the sign of a - b, which the linear form often reduces to a constant.
      // Not for unsigned types: their a - b wraps, and its bound, clipped to the type, loses the negative side.
      bool by_difference = a.type().is_scalar() && a.type().is_int();
      ConstBound d = by_difference ? difference_bound(a, b) : ConstBound::everything();
      if (!by_difference) {
        ConstBound ba = bound(a), bb = bound(b);
        if (ba.max <= bb.min) d = {ConstBound::kNegInf, 0};
        else if (ba.min >= bb.max) d = {0, ConstBound::kPosInf};
      }
      if (d.max <= 0) return is_min ? a : b;
      if (d.min >= 0) return is_min ? b : a;
      // Floor division by a positive constant is monotonic: min(x // c, y // c) -> min(x, y) // c,
      // which decides min(n // 4, (n + 3) // 4) (a split's whole and partial tiles).
      const auto *da = a.template as<FloorDiv>(), *db = b.template as<FloorDiv>();
      if (by_difference && da && db && structural_equal(da->b, db->b))
        if (const int64_t* c = as_const_int(da->b); c && *c > 0) {
          ConstBound n = bound(mutate(Sub::make(da->a, db->a)));
          if (n.max <= 0) return is_min ? a : b;
          if (n.min >= 0) return is_min ? b : a;
        }
      // min(min(x, c1), c2) -> min(x, min(c1, c2))
      if (const auto* inner = a.template as<Node>()) {
        if (as_const_int(inner->b) && as_const_int(b))
          return mutate(Node::make(inner->a, mutate(Node::make(inner->b, b))));
      }
      // Absorption: max(min(x, y), x) -> x and min(max(x, y), x) -> x, in either order.
      using Dual = std::conditional_t<std::is_same_v<Node, Min>, Max, Min>;
      auto absorbs = [](const Expr& e, const Expr& x) {
        const auto* d = e.template as<Dual>();
        return d && (structural_equal(d->a, x) || structural_equal(d->b, x));
      };
      if (absorbs(a, b)) return b;
      if (absorbs(b, a)) return a;
      // Idempotence: min(min(x, y), y) -> min(x, y), in either order.
      auto holds = [](const Expr& e, const Expr& x) {
        const auto* n = e.template as<Node>();
        return n && (structural_equal(n->a, x) || structural_equal(n->b, x));
      };
      if (holds(a, b)) return a;
      if (holds(b, a)) return b;
    }
    if (Expr v = broadcast_binary<Node>(a, b)) return v;
    return Node::make(a, b);
  }
  Expr mutate_(const Min* op) override { return min_max(op, true); }
  Expr mutate_(const Max* op) override { return min_max(op, false); }

  // --- comparisons and logic ---------------------------------------------------------------
  template <typename Node>
  Expr compare(const Node* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    constexpr NodeKind K = Node::kKind;
    // Integers compare as integers: doubles would round those beyond 2^53 together.
    auto decide = [](auto x, auto y) {
      switch (K) {
        case NodeKind::EQ:
          return x == y;
        case NodeKind::NE:
          return x != y;
        case NodeKind::LT:
          return x < y;
        case NodeKind::LE:
          return x <= y;
        case NodeKind::GT:
          return x > y;
        default:
          return x >= y;
      }
    };
    int lanes = a.type().lanes;
    const int64_t* ia = as_const_int(a);
    const int64_t* ib = as_const_int(b);
    if (ia && ib) return make_const(DataType::Bool(lanes), decide(*ia, *ib) ? 1 : 0);
    const double* fa = as_const_float(a);
    const double* fb = as_const_float(b);
    if (fa && fb) return make_const(DataType::Bool(lanes), decide(*fa, *fb) ? 1 : 0);
    if (a.type().is_integer() || a.type().is_bool()) {
      // The range of a - b decides most index comparisons (i*8 + j < 64 when i < 7, j < 8).
      ConstBound d;
      if (a.type().is_scalar() && a.type().is_int()) {  // unsigned a - b wraps (see min_max)
        d = difference_bound(a, b);
      } else {
        ConstBound ba = bound(a), bb = bound(b);
        if (ba.bounded() && bb.bounded()) d = {ba.min - bb.max, ba.max - bb.min};
      }
      std::optional<bool> result;
      switch (K) {
        case NodeKind::EQ:
          if (d.is_point()) result = d.min == 0;
          else if (!d.contains(0)) result = false;
          break;
        case NodeKind::NE:
          if (d.is_point()) result = d.min != 0;
          else if (!d.contains(0)) result = true;
          break;
        case NodeKind::LT:
          if (d.max < 0) result = true;
          else if (d.min >= 0) result = false;
          break;
        case NodeKind::LE:
          if (d.max <= 0) result = true;
          else if (d.min > 0) result = false;
          break;
        case NodeKind::GT:
          if (d.min > 0) result = true;
          else if (d.max <= 0) result = false;
          break;
        default:
          if (d.min >= 0) result = true;
          else if (d.max < 0) result = false;
          break;
      }
      if (result) return make_const(DataType::Bool(lanes), *result ? 1 : 0);
    }
    if (Expr v = broadcast_binary<Node>(a, b)) return v;
    return Node::make(a, b);
  }
  Expr mutate_(const EQ* op) override { return compare(op); }
  Expr mutate_(const NE* op) override { return compare(op); }
  Expr mutate_(const LT* op) override { return compare(op); }
  Expr mutate_(const LE* op) override { return compare(op); }
  Expr mutate_(const GT* op) override { return compare(op); }
  Expr mutate_(const GE* op) override { return compare(op); }

  Expr mutate_(const And* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_zero(a) || is_one(b)) return a;
    if (is_zero(b) || is_one(a)) return b;
    if (structural_equal(a, b)) return a;
    return And::make(a, b);
  }
  Expr mutate_(const Or* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_one(a) || is_zero(b)) return a;
    if (is_one(b) || is_zero(a)) return b;
    if (structural_equal(a, b)) return a;
    return Or::make(a, b);
  }
  Expr mutate_(const Not* op) override {
    Expr a = mutate(op->a);
    if (const int64_t* c = as_const_int(a)) return make_const(a.type(), *c ? 0 : 1);
    if (const auto* n = a.as<Not>()) return n->a;
    // A comparison with NaN is false both ways: !(a < b) is a >= b only for integers.
    const auto ordered = [](const Expr& x) { return !x.type().is_float(); };
    if (const auto* x = a.as<LT>(); x && ordered(x->a)) return GE::make(x->a, x->b);
    if (const auto* x = a.as<LE>(); x && ordered(x->a)) return GT::make(x->a, x->b);
    if (const auto* x = a.as<GT>(); x && ordered(x->a)) return LE::make(x->a, x->b);
    if (const auto* x = a.as<GE>(); x && ordered(x->a)) return LT::make(x->a, x->b);
    if (const auto* x = a.as<EQ>()) return NE::make(x->a, x->b);
    if (const auto* x = a.as<NE>()) return EQ::make(x->a, x->b);
    return Not::make(a);
  }

  Expr mutate_(const Select* op) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (const int64_t* k = as_const_int(c)) return *k ? t : f;
    if (structural_equal(t, f)) return t;
    return Select::make(c, t, f);
  }

  Expr mutate_(const Cast* op) override {
    Expr v = mutate(op->value);
    DataType t = op->type;
    if (v.type() == t) return v;
    if (t.is_scalar()) {
      if (const int64_t* c = as_const_int(v)) {
        if (t.is_float()) return FloatImm::make(t, round_to(t, double(*c)));
        return IntImm::make(t, wrap_to_type(t, *c));
      }
      if (const double* c = as_const_float(v); c && std::isfinite(*c)) {
        if (t.is_float()) return FloatImm::make(t, round_to(t, *c));
        if (t.is_bool()) return IntImm::make(t, *c != 0);
        if (std::fabs(*c) < 9.2e18) return IntImm::make(t, wrap_to_type(t, static_cast<int64_t>(*c)));
      }
    }
    // Widening an integer cast of an integer cast is one cast when no value can change.
    return Cast::make(t, v);
  }

  Expr mutate_(const Ramp* op) override {
    Expr base = mutate(op->base), stride = mutate(op->stride);
    if (is_zero(stride)) return Broadcast::make(base, op->lanes);
    if (base.same_as(op->base) && stride.same_as(op->stride)) return Expr(op);
    return Ramp::make(base, stride, op->lanes);
  }

  Expr mutate_(const Let* op) override {
    Expr value = mutate(op->value);
    if (value.as<IntImm>() || value.as<FloatImm>() || value.as<VarNode>())
      return mutate(substitute(op->body, op->var, value));
    Expr body = with_bound(op->var.get(), bound(value), [&] { return mutate(op->body); });
    return Let::make(op->var, value, body);
  }

  // --- statements ------------------------------------------------------------------------
  Stmt mutate_(const For* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (const int64_t* e = as_const_int(extent); e && *e <= 0) return Evaluate::make(0);
    if (is_one(extent)) return mutate(substitute(op->body, VarMap{{op->var.get(), min}}));
    ConstBound mb = bound(min), eb = bound(extent);
    eb.max = std::min(eb.max, upper_bound(extent, vars_));
    // The largest value needs only upper bounds: an extent below zero runs no iteration.
    const bool finite = mb.max != ConstBound::kPosInf && eb.max != ConstBound::kPosInf;
    ConstBound vb{mb.min, finite ? mb.max + eb.max - 1 : ConstBound::kPosInf};
    Stmt body = with_bound(op->var.get(), vb, [&] { return mutate(op->body); });
    if (const auto* ev = body.as<Evaluate>(); ev && as_const_int(ev->value)) return body;
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return Stmt(op);
    return For::make(op->var, min, extent, op->for_kind, body, op->pragmas);
  }

  Stmt mutate_(const ThreadExtent* op) override {
    Expr extent = mutate(op->extent);
    ConstBound eb = bound(extent);
    ConstBound vb{0, eb.bounded() ? eb.max - 1 : ConstBound::kPosInf};
    Stmt body = with_bound(op->var.get(), vb, [&] { return mutate(op->body); });
    if (extent.same_as(op->extent) && body.same_as(op->body)) return Stmt(op);
    return ThreadExtent::make(op->var, op->tag, extent, body);
  }

  Stmt mutate_(const LetStmt* op) override {
    Expr value = mutate(op->value);
    if (value.as<IntImm>() || value.as<FloatImm>() || value.as<VarNode>())
      return mutate(substitute(op->body, VarMap{{op->var.get(), value}}));
    Stmt body = with_bound(op->var.get(), bound(value), [&] { return mutate(op->body); });
    return LetStmt::make(op->var, value, body);
  }

  Stmt mutate_(const IfThenElse* op) override {
    Expr c = mutate(op->condition);
    if (const int64_t* k = as_const_int(c)) {
      if (*k) return mutate(op->then_case);
      return op->else_case ? mutate(op->else_case) : Evaluate::make(0);
    }
    Stmt t = mutate(op->then_case);
    Stmt e = op->else_case ? mutate(op->else_case) : Stmt();
    return IfThenElse::make(c, t, e);
  }

 private:
  BoundMap vars_;
};

}  // namespace

Expr simplify(const Expr& e, const BoundMap& vars) {
  if (!e) return e;
  return Simplifier(vars).mutate(e);
}

Stmt simplify(const Stmt& s, const BoundMap& vars) {
  if (!s) return s;
  return Simplifier(vars).mutate(s);
}

namespace {

// The sides of a max (nested ones flattened); `e` itself where it is none.
std::vector<Expr> max_sides(const Expr& e) {
  if (const auto* m = e.as<Max>()) {
    std::vector<Expr> sides = max_sides(m->a), b = max_sides(m->b);
    sides.insert(sides.end(), b.begin(), b.end());
    return sides;
  }
  return {e};
}

// Expressions whose minimum is `e`: the sides of a min, with the terms added to (or subtracted
// from) it moved inside, and x - max(p, q) as x - p and x - q (a clipped span min(i, N - 1) + 1 -
// max(i, 0) has the side i + 1 - i).
std::vector<Expr> min_sides(const Expr& e) {
  if (const auto* m = e.as<Min>()) {
    std::vector<Expr> sides = min_sides(m->a), b = min_sides(m->b);
    sides.insert(sides.end(), b.begin(), b.end());
    return sides;
  }
  std::vector<Expr> sides;
  if (const auto* add = e.as<Add>()) {
    if (std::vector<Expr> a = min_sides(add->a); a.size() > 1) {
      for (const Expr& x : a) sides.push_back(x + add->b);
    } else if (std::vector<Expr> b = min_sides(add->b); b.size() > 1) {
      for (const Expr& x : b) sides.push_back(add->a + x);
    }
  } else if (const auto* sub = e.as<Sub>()) {
    for (const Expr& x : min_sides(sub->a))
      for (const Expr& y : max_sides(sub->b)) sides.push_back(x - y);
    if (sides.size() < 2) sides.clear();
  }
  if (sides.empty()) sides.push_back(e);
  return sides;
}

}  // namespace

int64_t upper_bound(const Expr& e, const BoundMap& vars) {
  int64_t best = const_bound(simplify(e, vars), vars).max;
  std::vector<Expr> sides = min_sides(e);
  if (sides.size() > 1)
    for (const Expr& side : sides) best = std::min(best, const_bound(simplify(side, vars), vars).max);
  return best;
}

bool can_prove(const Expr& condition, const BoundMap& vars) { return is_const_int(simplify(condition, vars), 1); }

}  // namespace tessera::tensor_ir::arith
