// Arithmetic of symbolic sizes: products of dimension variables compared and divided as
// polynomials, strides of symbolic dimensions in intervals, and div/mod pairs of a symbolic divisor.
#include <gtest/gtest.h>

#include "tensor_ir/arith/interval.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {
namespace {

TEST(Polynomial, ProductsOfSizesCompareWhateverTheirGrouping) {
  Var n("N"), l("L");
  EXPECT_TRUE(arith::equal_as_polynomials(l * n * 256, l * (n * 4) * 64));
  EXPECT_TRUE(arith::equal_as_polynomials((l - 1) * n + n, l * n));
  EXPECT_FALSE(arith::equal_as_polynomials(l * n * 256, l * n * 255));
  EXPECT_FALSE(arith::equal_as_polynomials(l * n, l * Var("N")));  // another variable of the same name
}

TEST(Polynomial, ExactQuotientsOnlyOfSingleTermsThatDivideEveryTerm) {
  Var n("N"), l("L");
  auto q = arith::exact_quotient(l * n * 256, n * 4);
  ASSERT_TRUE(q);
  EXPECT_TRUE(arith::equal_as_polynomials(*q, l * 64));
  EXPECT_FALSE(arith::exact_quotient(l * n * 256 + 2, n * 4));  // 2 is not a multiple of N*4
  EXPECT_FALSE(arith::exact_quotient(l * n * 6, n * 4));        // 6 is not a multiple of 4
  EXPECT_FALSE(arith::exact_quotient(l * n, n + 1));            // the divisor has two terms
}

TEST(Polynomial, ASymbolicStrideKeepsTheIntervalOrdered) {
  Var i("i"), j("j"), n("N"), l("L");
  arith::IntervalMap dom{{i.get(), {Expr(0), l - 1}}, {j.get(), {Expr(0), n - 1}}};
  arith::Interval r = arith::eval_interval(i * n + j, dom);
  ASSERT_TRUE(r.bounded());
  EXPECT_EQ(to_string(r.min), "0");
  EXPECT_TRUE(arith::equal_as_polynomials(r.max, l * n - 1));
  // A stride that may be negative gives no bound.
  EXPECT_FALSE(arith::eval_interval(i * (n - 2), dom).bounded());
}

TEST(Polynomial, DivModPairsOfASymbolicDivisorMerge) {
  Var x("x"), n("N");
  EXPECT_EQ(to_string(arith::simplify(floordiv(x, n) * n + floormod(x, n))), "x");
  EXPECT_EQ(to_string(arith::simplify(floordiv(x, n) * n * 3 + floormod(x, n) * 3)), "x*3");
  // Different coefficients do not merge.
  EXPECT_NE(to_string(arith::simplify(floordiv(x, n) * n * 2 + floormod(x, n))), "x*2");
}

}  // namespace
}  // namespace tessera::tensor_ir
