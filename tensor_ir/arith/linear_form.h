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
  // Adds coeff * term, merging with a structurally equal term already present.
  void add_term(const Expr& term, int64_t coeff);
  void add(const LinearForm& other, int64_t scale = 1);
  // Replaces (x // c)*(c*k) + (x % c)*k by x*k, and (x // c % m)*(c*k) + (x % c)*k by
  // (x % (c*m))*k: what fusing loops and splitting them again produces.
  void merge_div_mod_pairs();
  // Terms sorted by decreasing |coefficient| (first appearance breaks ties), then the constant:
  // i*48 + j + 3.
  Expr to_expr() const;
};

// Scalar integer expressions only; anything else is a single term.
LinearForm to_linear_form(const Expr& e);

// Wraps `v` to the range of an integer type (two's complement), as the hardware does.
int64_t wrap_to_type(DataType type, int64_t v);

}  // namespace tessera::tensor_ir::arith
