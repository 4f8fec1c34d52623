#include "tensor_ir/dimension_must_equal.h"

#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ir.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

void require_constant_dim(const Expr& dim, int64_t value, const std::string& message) {
  if (const auto* v = dim.as<VarNode>()) throw DimensionMustEqual(v->name, value, message);
}

namespace {

// x for max(x, 0) or max(0, x); the dimension itself otherwise.
Expr unclamped(const Expr& d) {
  if (const auto* m = d.as<Max>()) {
    if (is_const_int(m->b, 0)) return m->a;
    if (is_const_int(m->a, 0)) return m->b;
  }
  return d;
}

}  // namespace

bool same_dimension(const Expr& a, const Expr& b) {
  return arith::equal_as_polynomials(a, b) || arith::equal_as_polynomials(unclamped(a), unclamped(b));
}

void require_multiple_for_same_dimension(const Expr& a, const Expr& b, const std::string& message) {
  std::vector<Var> vars = vars_of(a);
  for (const Var& v : vars_of(b)) vars.push_back(v);
  arith::BoundMap sizes;  // every variable is a size
  for (const Var& v : vars) sizes[v.get()] = {0, arith::ConstBound::kPosInf};
  for (const Var& v : vars) {
    for (int64_t factor = 2; factor <= 64; ++factor) {
      const Var half(v->name + "_div" + std::to_string(factor));
      sizes[half.get()] = {0, arith::ConstBound::kPosInf};
      const Expr multiple = half * Expr(factor);
      if (same_dimension(arith::simplify(substitute(a, v, multiple), sizes),
                         arith::simplify(substitute(b, v, multiple), sizes)))
        throw DimensionMustBeMultiple(v->name, factor, message);
    }
  }
}

}  // namespace tessera::tensor_ir
