#include "tensor_ir/arith/polynomial.h"

#include <map>
#include <string>
#include <vector>

#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir::arith {

namespace {

// A monomial is its atoms, sorted by their printed form (equal atoms print alike; distinct
// variables of one name are kept apart by the node's address).
using Monomial = std::vector<std::string>;

struct Polynomial {
  std::map<Monomial, int64_t> terms;
  std::map<std::string, Expr> atoms;  // printed form -> the atom

  void add(const Polynomial& o, int64_t scale) {
    for (const auto& [m, c] : o.terms)
      if ((terms[m] += c * scale) == 0) terms.erase(m);
    atoms.insert(o.atoms.begin(), o.atoms.end());
  }
};

std::string atom_key(const Expr& e) {
  if (const auto* v = e.as<VarNode>()) return v->name + "@" + std::to_string(reinterpret_cast<uintptr_t>(v));
  return to_string(e);
}

Polynomial polynomial(const Expr& e) {
  Polynomial p;
  if (const auto* c = e.as<IntImm>()) {
    if (c->value) p.terms[{}] = c->value;
  } else if (const auto* add = e.as<Add>()) {
    p = polynomial(add->a);
    p.add(polynomial(add->b), 1);
  } else if (const auto* sub = e.as<Sub>()) {
    p = polynomial(sub->a);
    p.add(polynomial(sub->b), -1);
  } else if (const auto* mul = e.as<Mul>()) {
    Polynomial a = polynomial(mul->a), b = polynomial(mul->b);
    for (const auto& [ma, ca] : a.terms)
      for (const auto& [mb, cb] : b.terms) {
        Monomial m = ma;
        m.insert(m.end(), mb.begin(), mb.end());
        std::sort(m.begin(), m.end());
        if ((p.terms[m] += ca * cb) == 0) p.terms.erase(m);
      }
    p.atoms = a.atoms;
    p.atoms.insert(b.atoms.begin(), b.atoms.end());
  } else {
    const std::string key = atom_key(e);
    p.terms[{key}] = 1;
    p.atoms[key] = e;
  }
  return p;
}

bool is_integer(const Expr& e) { return e.defined() && e.type().is_integer() && !e.type().is_vector(); }

}  // namespace

bool equal_as_polynomials(const Expr& a, const Expr& b) {
  if (!is_integer(a) || !is_integer(b)) return false;
  Polynomial d = polynomial(simplify(a));
  d.add(polynomial(simplify(b)), -1);
  return d.terms.empty();
}

std::optional<Expr> exact_quotient(const Expr& a, const Expr& b) {
  if (!is_integer(a) || !is_integer(b)) return std::nullopt;
  const Polynomial pa = polynomial(simplify(a)), pb = polynomial(simplify(b));
  if (pb.terms.size() != 1) return std::nullopt;
  const auto& [divisor, scale] = *pb.terms.begin();
  Expr quotient = make_zero(a.type());
  for (const auto& [m, c] : pa.terms) {
    if (c % scale) return std::nullopt;
    Monomial rest = m;
    for (const std::string& atom : divisor) {
      auto it = std::find(rest.begin(), rest.end(), atom);
      if (it == rest.end()) return std::nullopt;
      rest.erase(it);
    }
    Expr term = make_const(a.type(), static_cast<double>(c / scale));
    for (const std::string& atom : rest) term = term * pa.atoms.at(atom);
    quotient = quotient + term;
  }
  return simplify(quotient);
}

}  // namespace tessera::tensor_ir::arith
