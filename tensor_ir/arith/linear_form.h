// Integer expressions as sum(coefficient * term) + constant, where terms are the non-linear
// parts (variables, x // c, min(...), loads...). Collecting like terms this way is what lets
// the simplifier cancel (i*8 + 7) - i*8 to 7 and see that (i*8 + j) // 8 is i + j // 8.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "tensor_ir/ir.h"

namespace tessera::tensor_ir::arith {

struct LinearForm {
  DataType type;
  std::vector<std::pair<Expr, int64_t>> terms;  // structurally distinct terms, nonzero coefficients
  int64_t constant = 0;

  bool is_constant() const { return terms.empty(); }
  // The greatest common divisor of the coefficients and the constant (0 for the zero form): the
  // form is a multiple of it wherever its terms are integers.
  int64_t common_factor() const;
  // Adds coeff * term, merging with a structurally equal term already present.
  void add_term(const Expr& term, int64_t coeff);
  void add(const LinearForm& other, int64_t scale = 1);
  // Replaces (x // c)*(c*k) + (x % c)*k by x*k, and (x // c % m)*(c*k) + (x % c)*k by
  // (x % (c*m))*k: what fusing loops and splitting them again produces.
  void merge_div_mod_pairs();
  // The same for a symbolic divisor d: (x // d)*(d*g)*k + (x % d)*g*k is x*g*k, g a constant or
  // an expression (the row length L of rows over L*L). Term i is the first product; true when it
  // merged.
  bool merge_symbolic_div_mod(size_t i);
  // Replaces x*k + (-x % c)*k (k > 0) by -(-x // c)*c*k: x rounded up to a multiple of c, as pads
  // computed from symbolic sizes give it (L + (8 - L % 8) % 8), so that c provably divides it.
  void round_up_to_multiples();
  // Writes each (e // c)*(c*k) (c > 0 a constant) as e*k - (e % c)*k, so that e*k may cancel
  // against the other terms: M - (M + 6) // 7 * 7 is (M + 6) % 7 - 6, at most 0, which the
  // bounds of its terms cannot tell. True when a term was written so.
  bool expand_multiples_of_quotients();
  // Terms sorted by decreasing |coefficient| (first appearance breaks ties), then the constant:
  // i*48 + j + 3.
  Expr to_expr() const;
};

// Scalar integer expressions only; anything else is a single term.
LinearForm to_linear_form(const Expr& e);

// Wraps `v` to the range of an integer type (two's complement), as the hardware does.
int64_t wrap_to_type(DataType type, int64_t v);

// int64 arithmetic in two's complement, as the hardware does it: defined where the plain operators
// overflow (undefined behaviour), e.g. for the bounds ONNX writes as INT64_MIN.
inline int64_t wrapping_add(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) + uint64_t(b)); }
inline int64_t wrapping_sub(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) - uint64_t(b)); }
inline int64_t wrapping_mul(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) * uint64_t(b)); }
// Truncating division and remainder; INT64_MIN / -1 wraps to INT64_MIN (remainder 0). b != 0.
inline int64_t wrapping_div(int64_t a, int64_t b) { return b == -1 ? wrapping_sub(0, a) : a / b; }
inline int64_t wrapping_rem(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

}  // namespace tessera::tensor_ir::arith
