// The arithmetic simplifier: folding, canonical linear forms, div/mod under known bounds,
// vector algebra and statement clean-up.
#include <gtest/gtest.h>

#include <limits>

#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {
namespace {

using arith::BoundMap;
using arith::ConstBound;
using arith::simplify;

std::string s(const Expr& e, const BoundMap& vars = {}) { return to_string(simplify(e, vars)); }

TEST(Simplify, FoldsConstants) {
  EXPECT_EQ(s(Expr(3) + 4 * Expr(5)), "23");
  EXPECT_EQ(s(floordiv(Expr(-7), 2)), "-4");
  EXPECT_EQ(s(floormod(Expr(-7), 2)), "1");
  EXPECT_EQ(s(Expr(-7) / 2), "-3");
  EXPECT_EQ(s(Expr(-7) % 2), "-1");
  EXPECT_EQ(s(make_const(runtime::kFloat32, 1.5) * 2), "3.0f");
  EXPECT_EQ(s(cast(runtime::kInt32, make_const(runtime::kFloat32, 2.75))), "int32(2)");
  EXPECT_EQ(s(cast(runtime::DataType::Int(8), Expr(300))), "int8(44)");
}

TEST(Simplify, CollectsLinearTerms) {
  Var i("i"), j("j");
  EXPECT_EQ(s((i * 8 + 7) - i * 8), "7");
  EXPECT_EQ(s(j + i * 48 + 3 - j), "i*48 + 3");
  EXPECT_EQ(s((i + 1) * 4 - 4), "i*4");
  EXPECT_EQ(s(i - j * 2), "i - j*2");
  EXPECT_EQ(s(Expr(5) - i), "5 - i");
}

TEST(Simplify, DivModUnderKnownBounds) {
  Var io("io"), ii("ii");
  BoundMap b{{ii.get(), {0, 7}}, {io.get(), {0, 100}}};
  EXPECT_EQ(s(floordiv(io * 8 + ii, 8), b), "io");
  EXPECT_EQ(s(floormod(io * 8 + ii, 8), b), "ii");
  EXPECT_EQ(s(floordiv(io * 16 + ii, 4), b), "io*4 + ii // 4");
  EXPECT_EQ(s(floormod(io * 16 + ii + 16, 4), b), "ii % 4");
  EXPECT_EQ(s(floordiv(floordiv(io, 2), 3), b), "io // 6");
  EXPECT_EQ(s((io * 8 + ii) / 8, b), "io");  // truncation of a non-negative value floors
  // Without bounds nothing is assumed.
  EXPECT_EQ(s(floordiv(io * 8 + ii, 8)), "io + ii // 8");
}

TEST(Simplify, DivModByAMultipleOfTheStep) {
  // A reduction of 64 unrolled by 4 (ki < 4) in rows of 64: one division per ko, none per ki.
  Var ko("ko"), ki("ki"), kj("kj"), t("t"), i("i"), a("a"), b("b");
  BoundMap bounds{{ko.get(), {0, 63}}, {ki.get(), {0, 3}}, {kj.get(), {0, 4}}, {t.get(), {0, 127}},
                  {i.get(), {0, 7}},   {a.get(), {0, 9}},  {b.get(), {0, 7}}};
  EXPECT_EQ(s(floordiv(ko * 4 + ki, 64), bounds), "ko // 16");
  EXPECT_EQ(s(floormod(ko * 4 + ki, 64), bounds), "ko % 16*4 + ki");
  EXPECT_EQ(s(floordiv(t * 8 + i + 128, 128), bounds), "t // 16 + 1");
  // The largest factor whose remainder stays below it: b*4 + ki < 32.
  EXPECT_EQ(s(floordiv(a * 32 + b * 4 + ki, 64), bounds), "a // 2");
  EXPECT_EQ(s(floormod(a * 32 + b * 4 + ki, 64), bounds), "a % 2*32 + b*4 + ki");
  // Not when the remainder may reach the factor (kj <= 4), nor without bounds.
  EXPECT_EQ(s(floordiv(ko * 4 + kj, 64), bounds), "(ko*4 + kj) // 64");
  EXPECT_EQ(s(floordiv(ko * 4 + Var("x"), 64), bounds), "(ko*4 + x) // 64");
}

TEST(Simplify, FusedIndexRecombines) {
  Var f("f");
  EXPECT_EQ(s(floordiv(f, 48) * 48 + floormod(f, 48)), "f");
  EXPECT_EQ(s((floordiv(f, 48) * 48 + floormod(f, 48)) * 2), "f*2");
  // Three fused axes split again: (f // 8 % 6)*8 + f % 8 is f % 48.
  EXPECT_EQ(s(floormod(floordiv(f, 8), 6) * 8 + floormod(f, 8)), "f % 48");
  // Rows of 256 over a symbolic count L, fused and split again: (f % L)*256 + (f // L)*(L*256).
  Var l("L");
  EXPECT_EQ(s(floormod(f, l) * 256 + floordiv(f, l) * (l * 256)), "f*256");
  EXPECT_EQ(s(floordiv(f, l) * (Expr(512) * l) + floormod(f, l) * 512 + 3), "f*512 + 3");
  EXPECT_EQ(s(floordiv(f, l) * l + floormod(f, l)), "f");
  // Rows of L over L*L: (f // L)*(L*L) + (f % L)*L is f*L.
  EXPECT_EQ(s(Var("k") * 16 + floordiv(f, l) * (l * l) + floormod(f, l) * l), "k*16 + f*L");
  // Not the same digits: a coefficient that is not the row length times the divisor stays.
  EXPECT_EQ(s(floormod(f, l) * 256 + floordiv(f, l) * (l * 128)), "f % L*256 + f // L*(L*128)");
}

TEST(Simplify, MinMaxAndComparisons) {
  Var i("i"), j("j");
  BoundMap b{{i.get(), {0, 9}}, {j.get(), {0, 3}}};
  EXPECT_EQ(s(min(i + 2, i + 5)), "i + 2");
  EXPECT_EQ(s(max(i, Expr(20)), b), "20");
  EXPECT_EQ(s(min(min(i, Expr(5)), Expr(3))), "min(i, 3)");
  EXPECT_EQ(s(i * 4 + j < 40, b), "true");
  EXPECT_EQ(s(i * 4 + j < 39, b), "i*4 + j < 39");
  EXPECT_EQ(s(i + 1 > i), "true");
  EXPECT_EQ(s(logical_and(i < 100, j == j), b), "true");
  EXPECT_EQ(s(logical_not(i < j)), "i >= j");
  EXPECT_EQ(s(select(i < 20, i, j), b), "i");
  // A float comparison with NaN is false both ways: !(x > 0) is not x <= 0.
  Var x("x", runtime::kFloat32);
  EXPECT_EQ(s(logical_not(x > make_const(runtime::kFloat32, 0))), "!(x > 0.0f)");
}

TEST(Simplify, VectorAlgebra) {
  Var i("i");
  Expr r = Ramp::make(Expr(0), Expr(1), 16);
  EXPECT_EQ(s(Broadcast::make(i * 16, 16) + r), "ramp(i*16, 1, 16)");
  EXPECT_EQ(s(Ramp::make(i, Expr(1), 8) * Broadcast::make(Expr(4), 8)), "ramp(i*4, 4, 8)");
  BoundMap b{{i.get(), {0, 3}}};
  EXPECT_EQ(s(floordiv(Ramp::make(i * 16, Expr(1), 16), Broadcast::make(Expr(16), 16)), b), "x16(i)");
  EXPECT_EQ(s(floormod(Ramp::make(i * 16, Expr(1), 16), Broadcast::make(Expr(16), 16)), b), "ramp(0, 1, 16)");
  EXPECT_EQ(s(Ramp::make(i, Expr(0), 4)), "x4(i)");
}

TEST(Simplify, AVectorFromAMultipleOfItsWidthStaysInOneBlock) {
  // A head of 64 values starting at h*64 + k*16 (h unbounded: a symbolic number of heads) never
  // crosses a block of 256 with 16 lanes: the loads stay contiguous.
  Var h("h"), k("k");
  Expr x16 = Ramp::make(h * 64 + k * 16, Expr(1), 16);
  EXPECT_EQ(s(floordiv(x16, Broadcast::make(Expr(256), 16))), "x16((h*4 + k) // 16)");
  EXPECT_EQ(s(floormod(x16, Broadcast::make(Expr(256), 16))), "ramp((h*4 + k) % 16*16, 1, 16)");
  // Starting at h*8 it may cross one.
  Expr x16_8 = Ramp::make(h * 8, Expr(1), 16);
  EXPECT_NE(s(floordiv(x16_8, Broadcast::make(Expr(256), 16))).rfind("x16(", 0), 0u);
}

TEST(Simplify, Statements) {
  Var i("i"), j("j");
  Buffer buf = BufferNode::make("A", runtime::kFloat32, {Expr(64)}, MemoryScope::Global);
  Stmt store = Store::make(buf, make_const(runtime::kFloat32, 1), i * 8 + j);
  // A loop of extent one disappears; an always-true guard goes too.
  Stmt inner = For::make(j, Expr(0), Expr(1), ForKind::Serial, IfThenElse::make(i * 8 + j < 64, store));
  Stmt loop = For::make(i, Expr(0), Expr(8), ForKind::Serial, inner);
  EXPECT_EQ(to_string(arith::simplify(loop)), "for (i, 0, 8) {\n  A[i*8] = 1.0f\n}\n");
  Stmt empty = For::make(i, Expr(0), Expr(0), ForKind::Serial, store);
  EXPECT_TRUE(is_no_op(arith::simplify(empty)));
}

TEST(Simplify, SymbolicSplitsAndClippedTiles) {
  Var n("n"), jo("jo"), j("j");
  const BoundMap sizes{{n.get(), {0, ConstBound::kPosInf}}};
  // A split's whole tiles never outnumber all its tiles.
  EXPECT_EQ(s(min(floordiv(n, 4), floordiv(n + 3, 4)), sizes), "n // 4");
  EXPECT_EQ(s(max(floordiv(n + 3, 4), floordiv(n, 4)), sizes), "(n + 3) // 4");
  // A tile clipped to a symbolic extent has at most 32 elements, so j // 32 is 0 inside it.
  Expr clipped = min(jo * 32 + 31, n - 1) + 1 - jo * 32;
  EXPECT_EQ(arith::upper_bound(clipped, sizes), 32);
  // A row of a region clipped to [0, n - 1] at both ends (a batch's row per iteration).
  EXPECT_EQ(arith::upper_bound(min(floordiv(j, n), n - 1) + 1 - max(floordiv(j, n), 0), sizes), 1);
  Buffer buf = BufferNode::make("A", runtime::kFloat32, {n}, MemoryScope::Global);
  Stmt loop =
      For::make(j, Expr(0), clipped, ForKind::Serial,
                Store::make(buf, make_const(runtime::kFloat32, 1), (jo + floordiv(j, 32)) * 32 + floormod(j, 32)));
  EXPECT_NE(to_string(arith::simplify(loop, sizes)).find("A[jo*32 + j] = 1.0f"), std::string::npos)
      << to_string(arith::simplify(loop, sizes));
}

TEST(Simplify, MinAndMaxAbsorbAndRepeatNothing) {
  // A fused row's region clipped at both ends by bound inference: [q, max(min(q, n - 1), q)] is
  // one row, whatever n is.
  Var q("q"), n("n");
  EXPECT_EQ(s(max(min(q, n - 1), q)), "q");
  EXPECT_EQ(s(min(q, max(n, q))), "q");
  EXPECT_EQ(s(min(min(q, n), n)), "min(q, n)");
  EXPECT_EQ(s(max(n, max(q, n))), "max(q, n)");
  EXPECT_EQ(s(max(min(min(q, n - 2), n - 2), q)), "q");
}

TEST(Simplify, SymbolicDivisorsWithAConstantFactor) {
  // Heads merged back: row i*4 + j // 64 of [L, N*4, 64] (j < 256) is row i // N, head
  // (i % N)*4 + j // 64, with one division per row instead of one per element.
  Var i("i"), j("j"), n("N"), h("h");
  const BoundMap b{{n.get(), {0, ConstBound::kPosInf}}, {i.get(), {0, ConstBound::kPosInf}}, {j.get(), {0, 255}}};
  Expr row = i * 4 + floordiv(j, 64);
  EXPECT_EQ(s(floordiv(row, n * 4), b), "i // N");
  EXPECT_EQ(s(floormod(row, n * 4), b), "i % N*4 + j // 64");
  EXPECT_EQ(s(floordiv(i * 8 + 4, n * 8 + 16), b), "i // (N + 2)");
  // Not when the rest may reach the factor, nor for a divisor that may be negative.
  EXPECT_EQ(s(floordiv(i * 4 + floordiv(j, 32), n * 4), b), "(i*4 + j // 32) // (N*4)");
  EXPECT_EQ(s(floordiv(i * 4 + 1, h * 4), b), "(i*4 + 1) // (h*4)");
}

TEST(Simplify, ComparesWithMultiplesOfQuotients) {
  // m rows rounded up to a multiple of 7 are at least m rows: (m + 6) // 7 * 7 = m + 6 - (m + 6) % 7.
  Var n("n"), h("h");
  const BoundMap sizes{{n.get(), {0, ConstBound::kPosInf}}, {h.get(), {0, ConstBound::kPosInf}}};
  Expr m = n * floordiv(h + 3, 4), rounded = floordiv(m + 6, 7) * 7;
  EXPECT_TRUE(arith::can_prove(m <= rounded, sizes));
  EXPECT_TRUE(arith::can_prove(rounded < m + 7, sizes));
  EXPECT_FALSE(arith::can_prove(rounded <= m + 5, sizes));
  EXPECT_EQ(s(min(rounded - 1, m - 1), sizes), "n*((h + 3) // 4) - 1");
  EXPECT_EQ(s(max(floordiv(m + 3, 4) * 4, m), sizes), "(n*((h + 3) // 4) + 3) // 4*4");
}

TEST(Simplify, WrapsNarrowIntegers) {
  Expr a = IntImm::make(runtime::DataType::Int(8), 100);
  EXPECT_EQ(s(a + IntImm::make(runtime::DataType::Int(8), 100)), "int8(-56)");
}

// int64 arithmetic wraps as the hardware's does (UBSan found i - INT64_MIN, a bound ONNX writes,
// overflowing the simplifier's own arithmetic), and large integers compare exactly.
TEST(Simplify, Int64ExtremesWrapAndCompareExactly) {
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  auto i64 = [](int64_t v) { return IntImm::make(runtime::kInt64, v); };
  Var i("i", runtime::kInt64);
  EXPECT_EQ(s(i - i64(lowest)), s(i + i64(lowest)));
  EXPECT_EQ(s(i64(lowest) * i64(-1)), s(i64(lowest)));
  EXPECT_EQ(s(floordiv(i64(lowest), i64(-1))), s(i64(lowest)));
  EXPECT_EQ(s(floormod(i64(lowest), i64(-1))), s(i64(0)));
  EXPECT_EQ(s(i64((int64_t(1) << 62) + 1) > i64(int64_t(1) << 62)), "true");
}

}  // namespace
}  // namespace tessera::tensor_ir
