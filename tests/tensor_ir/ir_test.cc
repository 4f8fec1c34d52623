// IR construction, type checking, printing and structural equality.
#include <gtest/gtest.h>

#include <type_traits>

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"

namespace tessera::tensor_ir {
namespace {

using runtime::kFloat32;

// `cond && other` on handles is a C++ bool; made an Expr it would be the int64 1.
static_assert(!std::is_convertible_v<bool, Expr>, "a bool must not become an Expr");
static_assert(std::is_convertible_v<int64_t, Expr> && std::is_convertible_v<int, Expr>);

TEST(IR, ConstantsAdoptTheOtherOperandsType) {
  Tensor A = placeholder({Expr(4)}, kFloat32, "A");
  Var i("i");
  Expr e = A(i) * 2 + 1;
  EXPECT_EQ(e.type(), kFloat32);
  EXPECT_EQ(to_string(e), "A[i]*2.0f + 1.0f");
}

TEST(IR, MismatchedTypesAreAnErrorNamingBoth) {
  Tensor A = placeholder({Expr(4)}, kFloat32, "A");
  Tensor B = placeholder({Expr(4)}, runtime::kInt32, "B");
  Var i("i");
  try {
    A(i) + B(i);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos);
  }
  EXPECT_THROW(A(i, i), Error);
  EXPECT_THROW(exp(B(i)), Error);
  EXPECT_THROW(Expr(1.5 > 0 ? 1 : 0) + make_const(kFloat32, 1.5) * Var("x"), Error);
}

TEST(IR, PrefetchTakesAScalarLoad) {
  Tensor A = placeholder({Expr(4)}, kFloat32, "A");
  Var i("i");
  EXPECT_EQ(to_string(call(Intrinsic::prefetch, {A(i + 1)})), "prefetch(A[i + 1])");
  try {
    call(Intrinsic::prefetch, {A(i) * 2});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prefetch: takes a scalar load of the element to fetch, got A[i]*2.0f"),
              std::string::npos)
        << e.what();
  }
}

TEST(IR, ReductionMustBeTheWholeBody) {
  Tensor A = placeholder({Expr(4), Expr(5)}, kFloat32, "A");
  IterVar k = reduce_axis(Range(Expr(0), Expr(5)), "k");
  EXPECT_THROW(compute(
                   {Expr(4)}, [&](const std::vector<Var>& i) { return sum(A(i[0], k), {k}) * 2; }, "C"),
               Error);
  Tensor C = compute(
      {Expr(4)}, [&](const std::vector<Var>& i) { return sum(A(i[0], k), {k}); }, "C");
  EXPECT_EQ(C.as<ComputeOp>()->reduce_axis().size(), 1u);
}

TEST(IR, PrinterDisambiguatesNamesAndParenthesizes) {
  Var a("x"), b("x");
  EXPECT_EQ(to_string((a - (b - 1)) * 2), "(x - (x_1 - 1))*2");
  EXPECT_EQ(to_string(floordiv(a + 1, 4)), "(x + 1) // 4");
}

TEST(IR, ComputeDagPrintsInputsFirst) {
  Tensor A = placeholder({Expr(4), Expr(5)}, kFloat32, "A");
  IterVar k = reduce_axis(Range(Expr(0), Expr(5)), "k");
  Tensor C = compute(
      {Expr(4)}, [&](const std::vector<Var>& i) { return sum(A(i[0], k), {k}); }, "C");
  EXPECT_EQ(to_string(std::vector<Tensor>{C}),
            "A: float32[4, 5] = placeholder\n"
            "C: float32[4] = compute(i => sum(A[i, k], axis=[k in 0:5]))\n");
  EXPECT_EQ(topological_order({C}).size(), 2u);
}

TEST(IR, StructuralEqualityIsUpToRenaming) {
  Var i("i"), j("j"), k("k");
  EXPECT_FALSE(structural_equal(i * 2 + 1, j * 2 + 1));  // free variables must be the same
  EXPECT_TRUE(structural_equal(i * 2 + 1, j * 2 + 1, /*map_free_vars=*/true));
  EXPECT_EQ(structural_hash(i * 2 + 1), structural_hash(j * 2 + 1));
  EXPECT_FALSE(structural_equal(i * 2 + 1, i * 3 + 1, true));
  EXPECT_FALSE(structural_equal(i + j, k + k, true));  // i and j must map to distinct variables
  EXPECT_FALSE(structural_equal(i, Expr(Var("f", kFloat32)), true));
  // Bound variables match up to renaming even without mapping free ones.
  Buffer buf = BufferNode::make("A", kFloat32, {Expr(4)}, MemoryScope::Global);
  auto loop = [&](Var v) {
    return For::make(v, Expr(0), Expr(4), ForKind::Serial, Store::make(buf, make_const(kFloat32, 0), v));
  };
  EXPECT_TRUE(structural_equal(loop(i), loop(j)));
  EXPECT_FALSE(structural_equal(
      loop(i), For::make(i, Expr(0), Expr(4), ForKind::Serial, Store::make(buf, make_const(kFloat32, 0), k))));
}

TEST(IR, MutatorKeepsUnchangedNodes) {
  Var i("i");
  Expr e = i * 2 + 1;
  class Identity : public IRMutator {};
  EXPECT_TRUE(Identity().mutate(e).same_as(e));
  class Renamer : public IRMutator {
   public:
    Var to{"n"};
    Expr mutate_(const VarNode*) override { return to; }
  } r;
  EXPECT_EQ(to_string(r.mutate(e)), "n*2 + 1");
}

TEST(IR, DataTypeParsing) {
  EXPECT_EQ(runtime::DataType::parse("float32x16").lanes, 16);
  EXPECT_EQ(runtime::DataType::parse("uint8").str(), "uint8");
  EXPECT_THROW(runtime::DataType::parse("float8"), Error);
}

}  // namespace
}  // namespace tessera::tensor_ir
