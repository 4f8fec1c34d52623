// Integer expressions of dimension variables as polynomials: sums of constant multiples of
// products of atoms (variables, and anything else such as x // 4 or min(x, y) taken whole).
// Symbolic shapes need this where the linear forms of the simplifier stop: L*N*256 and
// L*(N*4)*64 are one polynomial, and L*N*256 divided by N*4 is L*64.
#pragma once
#include <optional>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir::arith {

// Whether a and b (scalar integer expressions) are equal as polynomials; false means "not
// proven".
bool equal_as_polynomials(const Expr& a, const Expr& b);
// a / b when b divides a as a polynomial with integer coefficients (b a single term), simplified.
std::optional<Expr> exact_quotient(const Expr& a, const Expr& b);

}  // namespace tessera::tensor_ir::arith
