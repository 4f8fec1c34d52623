#include "tensor_ir/arith/const_bound.h"

#include <algorithm>

#include "tensor_ir/functor.h"

namespace tessera::tensor_ir::arith {

namespace {

using Wide = __int128;
constexpr int64_t kNegInf = ConstBound::kNegInf;
constexpr int64_t kPosInf = ConstBound::kPosInf;

// Infinite ends stay infinite; finite results that overflow int64 saturate to infinity.
int64_t saturate(Wide v) {
  if (v <= static_cast<Wide>(kNegInf)) return kNegInf;
  if (v >= static_cast<Wide>(kPosInf)) return kPosInf;
  return static_cast<int64_t>(v);
}
bool is_inf(int64_t v) { return v == kNegInf || v == kPosInf; }

int64_t add(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  return saturate(Wide(a) + b);
}
int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? kNegInf : kPosInf;
  return saturate(Wide(a) * b);
}
int64_t neg(int64_t a) { return a == kNegInf ? kPosInf : a == kPosInf ? kNegInf : -a; }
int64_t floor_div(int64_t a, int64_t b) {
  if (is_inf(a)) return (a < 0) != (b < 0) ? kNegInf : kPosInf;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

ConstBound type_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_int() && t.bits < 64) return {-(int64_t(1) << (t.bits - 1)), (int64_t(1) << (t.bits - 1)) - 1};
  if (t.is_uint() && t.bits < 64) return {0, (int64_t(1) << t.bits) - 1};
  if (t.is_uint()) return {0, kPosInf};
  return ConstBound::everything();
}

ConstBound intersect(ConstBound a, ConstBound b) { return {std::max(a.min, b.min), std::min(a.max, b.max)}; }
ConstBound join(ConstBound a, ConstBound b) { return {std::min(a.min, b.min), std::max(a.max, b.max)}; }

ConstBound from_corners(std::initializer_list<int64_t> v) { return {std::min(v), std::max(v)}; }

class Analyzer {
 public:
  explicit Analyzer(const BoundMap& vars) : vars_(vars) {}

  ConstBound bound(const Expr& e) {
    DataType t = e.type();
    if (!(t.is_integer() || t.is_bool())) return ConstBound::everything();
    return intersect(compute(e), type_range(t.element()));
  }

 private:
  ConstBound compute(const Expr& e) {
    if (const auto* c = e.as<IntImm>()) return ConstBound::point(c->value);
    if (const auto* v = e.as<VarNode>()) {
      auto it = vars_.find(v);
      return it == vars_.end() ? ConstBound::everything() : it->second;
    }
    if (const auto* op = e.as<Add>()) {
      auto a = bound(op->a), b = bound(op->b);
      return {add(a.min, b.min), add(a.max, b.max)};
    }
    if (const auto* op = e.as<Sub>()) {
      auto a = bound(op->a), b = bound(op->b);
      return {add(a.min, neg(b.max)), add(a.max, neg(b.min))};
    }
    if (const auto* op = e.as<Mul>()) {
      auto a = bound(op->a), b = bound(op->b);
      return from_corners({mul(a.min, b.min), mul(a.min, b.max), mul(a.max, b.min), mul(a.max, b.max)});
    }
    if (e.as<FloorDiv>() || e.as<Div>()) {
      const Expr& ea = e.as<FloorDiv>() ? e.as<FloorDiv>()->a : e.as<Div>()->a;
      const Expr& eb = e.as<FloorDiv>() ? e.as<FloorDiv>()->b : e.as<Div>()->b;
      auto a = bound(ea), b = bound(eb);
      // Only division by a positive range is bounded simply; truncation equals flooring when a >= 0.
      if (b.min > 0 && (e.as<FloorDiv>() || a.min >= 0))
        return from_corners(
            {floor_div(a.min, b.min), floor_div(a.min, b.max), floor_div(a.max, b.min), floor_div(a.max, b.max)});
      return ConstBound::everything();
    }
    if (const auto* op = e.as<FloorMod>()) {
      auto a = bound(op->a), b = bound(op->b);
      if (b.min > 0 && !is_inf(b.max)) {
        if (a.min >= 0 && a.max < b.min) return a;
        return {0, b.max - 1};
      }
      return ConstBound::everything();
    }
    if (const auto* op = e.as<Mod>()) {
      auto a = bound(op->a), b = bound(op->b);
      if (b.min > 0 && !is_inf(b.max) && a.min >= 0) return a.max < b.min ? a : ConstBound{0, b.max - 1};
      return ConstBound::everything();
    }
    if (const auto* op = e.as<Min>()) {
      auto a = bound(op->a), b = bound(op->b);
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    }
    if (const auto* op = e.as<Max>()) {
      auto a = bound(op->a), b = bound(op->b);
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
    if (const auto* op = e.as<Select>()) return join(bound(op->true_value), bound(op->false_value));
    if (const auto* op = e.as<Cast>()) {
      if (op->value.type().is_integer() || op->value.type().is_bool()) return bound(op->value);
      return ConstBound::everything();
    }
    if (const auto* op = e.as<Ramp>()) {
      auto base = bound(op->base), stride = bound(op->stride);
      auto last = from_corners({mul(stride.min, op->lanes - 1), mul(stride.max, op->lanes - 1)});
      return {std::min(base.min, add(base.min, last.min)), std::max(base.max, add(base.max, last.max))};
    }
    if (const auto* op = e.as<Broadcast>()) return bound(op->value);
    if (const auto* op = e.as<Let>()) {
      BoundMap inner = vars_;
      inner[op->var.get()] = bound(op->value);
      return Analyzer(inner).bound(op->body);
    }
    if (e.type().is_bool()) return {0, 1};
    return ConstBound::everything();
  }

  const BoundMap& vars_;
};

}  // namespace

ConstBound const_bound(const Expr& e, const BoundMap& vars) { return Analyzer(vars).bound(e); }

}  // namespace tessera::tensor_ir::arith
