#include "tensor_ir/arith/linear_form.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>

#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/op.h"
#include "tensor_ir/structural.h"

namespace tessera::tensor_ir::arith {

int64_t wrap_to_type(DataType type, int64_t v) {
  if (type.is_bool()) return v != 0;
  if (type.bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << type.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (type.is_int() && (u >> (type.bits - 1))) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

int64_t LinearForm::common_factor() const {
  int64_t g = std::llabs(constant);
  for (const auto& [term, coeff] : terms) g = std::gcd(g, std::llabs(coeff));
  return g;
}

void LinearForm::add_term(const Expr& term, int64_t coeff) {
  if (coeff == 0) return;
  for (auto it = terms.begin(); it != terms.end(); ++it) {
    if (structural_equal(it->first, term)) {
      it->second = wrapping_add(it->second, coeff);
      if (it->second == 0) terms.erase(it);
      return;
    }
  }
  terms.emplace_back(term, coeff);
}

void LinearForm::add(const LinearForm& other, int64_t scale) {
  for (const auto& [t, c] : other.terms) add_term(t, wrapping_mul(c, scale));
  constant = wrapping_add(constant, wrapping_mul(other.constant, scale));
}

namespace {

// A term `x % d` or `(x % d)*g` (either order): its FloorMod and g (1 for the first).
std::pair<const FloorMod*, Expr> mod_times(const Expr& term) {
  if (const auto* mod = term.as<FloorMod>()) return {mod, Expr(int64_t{1})};
  if (const auto* product = term.as<Mul>()) {
    if (const auto* mod = product->a.as<FloorMod>()) return {mod, product->b};
    if (const auto* mod = product->b.as<FloorMod>()) return {mod, product->a};
  }
  return {nullptr, Expr()};
}

}  // namespace

bool LinearForm::merge_symbolic_div_mod(size_t i) {
  // (x // d)*f with a symbolic d (a fused loop over a symbolic extent) and f a multiple of d, in
  // either order: the outer digit of x in base d, scaled by f / d.
  const auto* product = terms[i].first.as<Mul>();
  if (!product) return false;
  for (const auto& [quotient, factor] : {std::pair{product->a, product->b}, std::pair{product->b, product->a}}) {
    const auto* div = quotient.as<FloorDiv>();
    if (!div || as_const_int(div->b)) continue;
    std::optional<Expr> scale = structural_equal(div->b, factor) ? Expr(int64_t{1}) : exact_quotient(factor, div->b);
    if (!scale) continue;
    const Expr scaled = *scale * make_const(div->b.type(), static_cast<double>(terms[i].second));
    for (size_t j = 0; j < terms.size(); ++j) {
      const auto [mod, g] = mod_times(terms[j].first);
      if (j == i || !mod || !structural_equal(mod->a, div->a) || !structural_equal(mod->b, div->b)) continue;
      const int64_t k = terms[j].second;
      if (!equal_as_polynomials(scaled, g * make_const(g.type(), static_cast<double>(k)))) continue;
      // ... plus the last digit, (x % d)*g*k with g*k the same scale: together x*g*k.
      const Expr x = div->a;
      const Expr merged = as_const_int(g) ? x * g : Mul::make(x, g);
      terms.erase(terms.begin() + std::max(i, j));
      terms.erase(terms.begin() + std::min(i, j));
      add(to_linear_form(merged), k);
      return true;
    }
  }
  return false;
}

void LinearForm::round_up_to_multiples() {
  for (size_t i = 0; i < terms.size(); ++i) {
    const auto* mod = terms[i].first.as<FloorMod>();
    const int64_t k = terms[i].second;
    const int64_t* c = mod ? as_const_int(mod->b) : nullptr;
    if (!c || *c <= 0 || k <= 0) continue;
    // x*k + (e % c)*k = x*k + e*k - (e // c)*c*k, which is -(e // c)*c*k where e*k cancels x*k.
    LinearForm rest = *this;
    const Expr e = mod->a;
    rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(i));
    const size_t before = rest.terms.size();
    const LinearForm expanded = to_linear_form(e);
    rest.add(expanded, k);
    if (expanded.terms.empty() || rest.terms.size() + expanded.terms.size() != before) continue;
    rest.add_term(FloorDiv::make(e, mod->b), -*c * k);
    *this = rest;
    return;
  }
}

bool LinearForm::expand_multiples_of_quotients() {
  std::vector<std::pair<Expr, int64_t>> quotients;
  for (const auto& [term, k] : terms) {
    const auto* div = term.as<FloorDiv>();
    const int64_t* c = div ? as_const_int(div->b) : nullptr;
    if (c && *c > 0 && k % *c == 0) quotients.emplace_back(term, k);
  }
  for (const auto& [term, k] : quotients) {
    const auto* div = term.as<FloorDiv>();
    const int64_t scale = k / *as_const_int(div->b);
    add_term(term, -k);
    add(to_linear_form(div->a), scale);
    add_term(FloorMod::make(div->a, div->b), -scale);
  }
  return !quotients.empty();
}

void LinearForm::merge_div_mod_pairs() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < terms.size() && !changed; ++i) {
      // (x // c)*c*k, or (x // c % m)*c*k, the outer digits of x in base c.
      const Expr& high = terms[i].first;
      const auto* outer_mod = high.as<FloorMod>();
      const int64_t* m = outer_mod ? as_const_int(outer_mod->b) : nullptr;
      const auto* div = outer_mod ? outer_mod->a.as<FloorDiv>() : high.as<FloorDiv>();
      const int64_t* c = div ? as_const_int(div->b) : nullptr;
      if (!div && merge_symbolic_div_mod(i)) {
        changed = true;
        break;
      }
      if (!c || *c <= 0 || (outer_mod && (!m || *m <= 0))) continue;
      for (size_t j = 0; j < terms.size(); ++j) {
        const auto* mod = terms[j].first.as<FloorMod>();
        if (!mod || !is_const_int(mod->b, *c) || !structural_equal(mod->a, div->a)) continue;
        int64_t k = terms[j].second, kc = 0, cm = 0;
        if (__builtin_mul_overflow(k, *c, &kc) || terms[i].second != kc) continue;
        if (outer_mod && __builtin_mul_overflow(*c, *m, &cm)) continue;
        // ... plus x % c, the last digit: together x, or x % (c*m) when the outer digits wrap.
        Expr x = div->a;
        Expr merged = outer_mod ? FloorMod::make(x, IntImm::make(x.type(), cm)) : x;
        terms.erase(terms.begin() + std::max(i, j));
        terms.erase(terms.begin() + std::min(i, j));
        add(to_linear_form(merged), k);
        changed = true;
        break;
      }
    }
  }
}

Expr LinearForm::to_expr() const {
  std::vector<size_t> order(terms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::llabs(terms[a].second) > std::llabs(terms[b].second); });
  auto scaled = [&](const Expr& t, int64_t c) {
    return c == 1 ? t : Mul::make(t, IntImm::make(type, wrap_to_type(type, c)));
  };
  Expr result;
  std::vector<std::pair<Expr, int64_t>> negatives;
  for (size_t i : order) {
    const auto& [t, c] = terms[i];
    if (c < 0) {
      negatives.emplace_back(t, wrapping_sub(0, c));
      continue;
    }
    result = result ? Add::make(result, scaled(t, c)) : scaled(t, c);
  }
  int64_t k = wrap_to_type(type, constant);
  if (!result) {
    result = IntImm::make(type, k);
  } else if (k > 0) {
    result = Add::make(result, IntImm::make(type, k));
  } else if (k < 0 && k != std::numeric_limits<int64_t>::min()) {
    result = Sub::make(result, IntImm::make(type, -k));
  } else if (k < 0) {
    result = Add::make(result, IntImm::make(type, k));
  }
  for (const auto& [t, c] : negatives) result = Sub::make(result, scaled(t, c));
  return result;
}

LinearForm to_linear_form(const Expr& e) {
  LinearForm f;
  f.type = e.type();
  if (!e.type().is_integer() || e.type().is_vector()) {
    f.add_term(e, 1);
    return f;
  }
  if (const auto* c = e.as<IntImm>()) {
    f.constant = c->value;
  } else if (const auto* op = e.as<Add>()) {
    f = to_linear_form(op->a);
    f.add(to_linear_form(op->b));
  } else if (const auto* op = e.as<Sub>()) {
    f = to_linear_form(op->a);
    f.add(to_linear_form(op->b), -1);
  } else if (const auto* op = e.as<Mul>()) {
    LinearForm a = to_linear_form(op->a), b = to_linear_form(op->b);
    if (b.is_constant()) {
      f.add(a, b.constant);
    } else if (a.is_constant()) {
      f.add(b, a.constant);
    } else {
      f.add_term(e, 1);
    }
  } else {
    f.add_term(e, 1);
  }
  f.type = e.type();
  return f;
}

}  // namespace tessera::tensor_ir::arith
