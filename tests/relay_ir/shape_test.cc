// Symbolic shapes in the graph IR: what static code reads, how dimensions compare, and the type
// relations that keep dimension variables (broadcast, a kept batch, reshape).
#include <gtest/gtest.h>

#include "relay_ir/expr.h"
#include "relay_ir/ops/type_relations.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::relay_ir {
namespace {

using Dim = tensor_ir::Expr;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Shape, StaticCodeReadsIntegersAndASymbolicDimensionIsAnErrorNamingIt) {
  tensor_ir::Var n("N");
  Shape s({Dim(n), Dim(3), Dim(224)});
  EXPECT_FALSE(s.is_static());
  EXPECT_FALSE(s.is_static(0));
  EXPECT_TRUE(s.is_static(1));
  EXPECT_EQ(s[1], 3);
  EXPECT_EQ(s.ints_from(1), (std::vector<int64_t>{3, 224}));
  EXPECT_EQ(s.str(), "(N, 3, 224)");
  EXPECT_NE(message_of([&] { (void)s.ints(); }).find("dimension 0 of (N, 3, 224) is symbolic (N)"), std::string::npos);
  // Constant expressions fold: the shape is static.
  Shape folded({Dim(2) * Dim(3), Dim(4)});
  EXPECT_TRUE(folded.is_static());
  EXPECT_EQ(folded.ints(), (std::vector<int64_t>{6, 4}));
}

TEST(Shape, DimensionsCompareAsSimplifiedExpressions) {
  tensor_ir::Var n("N"), l("L");
  EXPECT_EQ(Shape({n * Dim(4), Dim(2)}), Shape({Dim(4) * n, Dim(2)}));
  EXPECT_NE(Shape({Dim(n)}), Shape({Dim(l)}));
  EXPECT_NE(Shape({Dim(n)}), Shape(std::vector<int64_t>{4}));
  EXPECT_EQ(Shape({n * l * Dim(2)}).numel().as<tensor_ir::IntImm>(), nullptr);
}

TEST(TypeRelations, SymbolicDimensionsBroadcastAgainstOneOrThemselves) {
  tensor_ir::Var n("N");
  Shape x({Dim(n), Dim(5)});
  EXPECT_EQ(broadcast_shapes(x, Shape(std::vector<int64_t>{1, 5})), x);
  EXPECT_EQ(broadcast_shapes(x, Shape(std::vector<int64_t>{5})), x);
  EXPECT_NE(message_of([&] {
              broadcast_shapes(x, Shape(std::vector<int64_t>{3, 5}));
            }).find("broadcast only if"),
            std::string::npos);
}

TEST(TypeRelations, TwoDimensionVariablesThatBroadcastMustBeOne) {
  // [N] against [M] (an exporter naming the dimensions of each input apart): M must be N; the
  // importer declares it so. [S] against [P + L] (a mask against the cached and new keys): S must
  // be P + L. Against an expression of the variable itself: an error.
  tensor_ir::Var n("N"), m("M"), s("S"), p("P"), l("L");
  try {
    broadcast_shapes(Shape({Dim(s)}), Shape({p + l}));
    FAIL() << "no requirement";
  } catch (const tensor_ir::DimensionRequirement& r) {
    EXPECT_EQ(r.kind, tensor_ir::DimensionRequirement::Kind::Is);
    EXPECT_EQ(r.var, "S");
    EXPECT_EQ(tensor_ir::to_string(r.expression), "P + L");
  }
  try {
    broadcast_shapes(Shape({Dim(n), Dim(5)}), Shape({Dim(m), Dim(5)}));
    FAIL() << "no requirement";
  } catch (const tensor_ir::DimensionRequirement& r) {
    EXPECT_EQ(r.kind, tensor_ir::DimensionRequirement::Kind::SameAs);
    EXPECT_EQ(r.var, "M");
    EXPECT_EQ(r.other, "N");
  }
  EXPECT_NE(message_of([&] { broadcast_shapes(Shape({Dim(n)}), Shape({m * Dim(n)})); }).find("broadcast only if"),
            std::string::npos);
}

TEST(TypeRelations, DimensionsEqualWhereAVariableIsPositiveBroadcastToTheSimplerOne) {
  // x[-L:] of P + L rows has L rows but at L = 0 (the whole axis): against L it broadcasts where
  // the caller collects L to check; never where the dimensions differ at positive sizes too.
  tensor_ir::Var p("P"), l("L");
  const Dim last_rows = tensor_ir::max(l + p - p * tensor_ir::min(l, Dim(1)), Dim(0));
  std::vector<tensor_ir::Var> positive;
  EXPECT_EQ(broadcast_shapes(Shape({Dim(last_rows), Dim(4)}), Shape({Dim(l), Dim(1)}), &positive),
            Shape({Dim(l), Dim(4)}));
  ASSERT_EQ(positive.size(), 1u);
  EXPECT_EQ(positive[0].get(), l.get());
  EXPECT_NE(message_of([&] { broadcast_shapes(Shape({Dim(last_rows)}), Shape({Dim(l)})); }).find("broadcast only if"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              broadcast_shapes(Shape({Dim(l) + Dim(1)}), Shape({Dim(l)}), &positive);
            }).find("broadcast only if"),
            std::string::npos);
}

TEST(TypeRelations, AConvolutionKeepsASymbolicBatchAndReshapeChecksElementCounts) {
  tensor_ir::Var n("N");
  Var x("x", tensor_type(Shape({Dim(n), Dim(3), Dim(8), Dim(8)}), runtime::kFloat32));
  Expr w = constant(runtime::NDArray::empty({4, 3, 3, 3}, runtime::kFloat32));
  Expr conv = call("conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  infer_type(conv);
  EXPECT_EQ(to_string(conv->checked_type), "float32[N, 4, 8, 8]");
  Expr flat = call("reshape", {conv}, {{"shape", Shape({Dim(n), Dim(256)})}});
  infer_type(flat);
  EXPECT_EQ(to_string(flat->checked_type), "float32[N, 256]");
  Expr wrong = call("reshape", {conv}, {{"shape", Shape({Dim(n), Dim(255)})}});
  EXPECT_NE(message_of([&] { infer_type(wrong); }).find("not provably equal"), std::string::npos);
}

// What a relation throws where a symbolic dimension must be a constant: a requirement naming
// the variable and the value where the dimension is a variable by itself, a plain error otherwise.
std::pair<std::string, int64_t> required_of(const Expr& e) {
  try {
    infer_type(e);
  } catch (const tensor_ir::DimensionRequirement& d) {
    return {d.var, d.value};
  } catch (const Error&) {
    return {"", -1};
  }
  return {"", 0};
}

TEST(TypeRelations, ADimensionVariableThatWeightsFixIsNamedWithItsValue) {
  tensor_ir::Var c("C"), k("K");
  Var x("x", tensor_type(Shape({Dim(1), Dim(c), Dim(8), Dim(8)}), runtime::kFloat32));
  Expr w = constant(runtime::NDArray::empty({4, 3, 3, 3}, runtime::kFloat32));
  EXPECT_EQ(required_of(call("conv", {x, w})), std::make_pair(std::string("C"), int64_t{3}));
  Expr grouped = constant(runtime::NDArray::empty({4, 1, 3, 3}, runtime::kFloat32));
  EXPECT_EQ(required_of(call("conv", {x, grouped}, {{"groups", int64_t{2}}})),
            std::make_pair(std::string("C"), int64_t{2}));
  Var a("a", tensor_type(Shape({Dim(5), Dim(k)}), runtime::kFloat32));
  Expr m = constant(runtime::NDArray::empty({6, 2}, runtime::kFloat32));
  EXPECT_EQ(required_of(call("matmul", {a, m})), std::make_pair(std::string("K"), int64_t{6}));
  EXPECT_EQ(required_of(call("gemm", {a, m})), std::make_pair(std::string("K"), int64_t{6}));
  Expr per_channel = constant(runtime::NDArray::empty({5}, runtime::kFloat32));
  EXPECT_EQ(required_of(call("batch_norm", {x, per_channel, per_channel, per_channel, per_channel})),
            std::make_pair(std::string("C"), int64_t{5}));
  Var rows("r", tensor_type(Shape({Dim(2), Dim(k)}), runtime::kFloat32));
  EXPECT_EQ(required_of(call("layer_norm", {rows, per_channel})), std::make_pair(std::string("K"), int64_t{5}));
  Var twice("t", tensor_type(Shape({Dim(1), Dim(c * 2), Dim(8), Dim(8)}), runtime::kFloat32));
  EXPECT_EQ(required_of(call("conv", {twice, w})), std::make_pair(std::string(""), int64_t{-1}));  // an expression
}

}  // namespace
}  // namespace tessera::relay_ir
