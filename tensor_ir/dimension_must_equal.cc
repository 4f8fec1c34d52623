#include "tensor_ir/dimension_must_equal.h"

#include <algorithm>

#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ir.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

void require_constant_dim(const Expr& dim, int64_t value, const std::string& message) {
  if (const auto* v = dim.as<VarNode>())
    throw DimensionRequirement(DimensionRequirement::Kind::Constant, v->name, value, "", message);
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

namespace {

// Throws a requirement (`message`) that the first variable of `a` and `b` for which `holds` the
// pair with it a multiple be the smallest such multiple (2 to 64), each variable a size.
template <typename Holds>
void require_multiple_for(const Expr& a, const Expr& b, const std::string& message, Holds holds) {
  std::vector<Var> vars = vars_of(a);
  for (const Var& v : vars_of(b)) vars.push_back(v);
  arith::BoundMap sizes;
  for (const Var& v : vars) sizes[v.get()] = {0, arith::ConstBound::kPosInf};
  for (const Var& v : vars) {
    const Var part(v->name);  // v as factor * part
    sizes[part.get()] = {0, arith::ConstBound::kPosInf};
    for (int64_t factor = 2; factor <= 64; ++factor) {
      const Expr multiple = part * Expr(factor);
      if (holds(arith::simplify(substitute(a, v, multiple), sizes), arith::simplify(substitute(b, v, multiple), sizes)))
        throw DimensionRequirement(DimensionRequirement::Kind::Multiple, v->name, factor, "", message);
    }
  }
}

}  // namespace

std::optional<std::vector<Var>> same_dimension_where_positive(const Expr& a, const Expr& b) {
  std::vector<Var> vars = vars_of(a);
  for (const Var& v : vars_of(b))
    if (std::none_of(vars.begin(), vars.end(), [&](const Var& u) { return u.get() == v.get(); })) vars.push_back(v);
  // Each variable v as part + 1 (part a size) in turn, then all of them at once.
  arith::BoundMap sizes;
  std::vector<std::pair<Var, Expr>> positive;
  for (const Var& v : vars) {
    const Var part(v->name);
    sizes[v.get()] = sizes[part.get()] = {0, arith::ConstBound::kPosInf};
    positive.emplace_back(v, part + Expr(1));
  }
  auto same_where = [&](const std::vector<std::pair<Var, Expr>>& at) {
    Expr x = a, y = b;
    for (const auto& [v, e] : at) {
      x = substitute(x, v, e);
      y = substitute(y, v, e);
    }
    return same_dimension(arith::simplify(x, sizes), arith::simplify(y, sizes));
  };
  for (const auto& p : positive)
    if (same_where({p})) return std::vector<Var>{p.first};
  if (positive.size() > 1 && same_where(positive)) return vars;
  return std::nullopt;
}

const Expr& simpler_dimension(const Expr& a, const Expr& b) {
  const size_t na = vars_of(a).size(), nb = vars_of(b).size();
  if (na != nb) return na < nb ? a : b;
  const std::string sa = to_string(a), sb = to_string(b);  // the same either way round
  if (sa.size() != sb.size()) return sa.size() < sb.size() ? a : b;
  return sa <= sb ? a : b;
}

void require_same_dimension(const Expr& a, const Expr& b, const std::string& message) {
  const auto *va = a.as<VarNode>(), *vb = b.as<VarNode>();
  if (va && vb && va != vb)
    throw DimensionRequirement(DimensionRequirement::Kind::SameAs, vb->name, 0, va->name, message);
  require_multiple_for(a, b, message, same_dimension);
  for (const auto& [var, other] : {std::pair{a, b}, std::pair{b, a}}) {
    const auto* v = var.as<VarNode>();
    const std::vector<Var> others = vars_of(other);
    if (v && !others.empty() && std::none_of(others.begin(), others.end(), [&](const Var& o) { return o.get() == v; }))
      throw DimensionRequirement(DimensionRequirement::Kind::Is, v->name, 0, "", message, other);
  }
}

void require_multiple_for_exact_quotient(const Expr& dividend, const Expr& divisor, const std::string& message) {
  require_multiple_for(dividend, divisor, message,
                       [](const Expr& x, const Expr& y) { return arith::exact_quotient(x, y).has_value(); });
}

}  // namespace tessera::tensor_ir
