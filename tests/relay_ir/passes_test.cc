// Graph passes on small graphs written in the text format: input and expected output.
#include <gtest/gtest.h>

#include "relay_ir/compute_of_call.h"
#include "relay_ir/functor.h"
#include "relay_ir/op.h"
#include "relay_ir/parser.h"
#include "relay_ir/printer.h"
#include "relay_ir/structural.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/passes.h"
#include "runtime/error.h"

namespace tessera::relay_ir {
namespace {

// Runs one pass (after InferType) and returns the printed result.
std::string run(const Pass& pass, const std::string& text) {
  PassContext ctx;
  Module m = run_passes(parse_module(text), {infer_type_pass(), pass}, ctx);
  return to_text(m);
}

// The text as the printer writes it, so expectations need not match spacing by hand.
std::string canonical(const std::string& text) { return to_text(infer_type(parse_module(text))); }

TEST(CommonSubexpr, MergesIdenticalCallsAndConstants) {
  std::string in = R"(def @main(%x: float32[4]) -> float32[4] {
  %0 = relu(%x);
  %1 = relu(%x);
  %2 = add(%0, constant(float32[4], [1, 2, 3, 4]));
  %3 = add(%1, constant(float32[4], [1, 2, 3, 4]));
  add(%2, %3)
})";
  std::string out = R"(def @main(%x: float32[4]) -> float32[4] {
  %0 = relu(%x);
  %1 = add(%0, constant(float32[4], [1, 2, 3, 4]));
  add(%1, %1)
})";
  EXPECT_EQ(run(eliminate_common_subexpr_pass(), in), canonical(out));
}

TEST(CommonSubexpr, KeepsCallsThatDiffer) {
  std::string in = R"(def @main(%x: float32[4], %y: float32[4]) -> float32[4] {
  %0 = relu(%x);
  %1 = relu(%y);
  add(%0, %1)
})";
  EXPECT_EQ(run(eliminate_common_subexpr_pass(), in), canonical(in));
}

TEST(DeadCode, ProjectionOfABuiltTuple) {
  std::string in = R"(def @main(%x: float32[4], %y: float32[4]) -> float32[4] {
  %0 = relu(%x);
  %1 = relu(%y);
  %2 = (%0, %1);
  %3 = %2.1;
  add(%3, %3)
})";
  std::string out = R"(def @main(%x: float32[4], %y: float32[4]) -> float32[4] {
  %0 = relu(%y);
  add(%0, %0)
})";
  EXPECT_EQ(run(dead_code_elimination_pass(), in), canonical(out));
}

TEST(FuseOps, ElementwiseChainBecomesOneKernel) {
  std::string in = R"(def @main(%x: float32[4, 8], %b: float32[8]) -> float32[4, 8] {
  %0 = add(%x, %b);
  %1 = relu(%0);
  add(%1, %x)
})";
  std::string out = R"(def @main(%x: float32[4, 8], %b: float32[8]) -> float32[4, 8] {
  %0 = fn [primitive=1] (%p0: float32[4, 8], %p1: float32[8]) -> float32[4, 8] {
    %1 = add(%p0, %p1);
    %2 = relu(%1);
    add(%2, %p0)
  };
  %0(%x, %b)
})";
  EXPECT_EQ(run(fuse_ops_pass(), in), canonical(out));
}

TEST(FuseOps, DiamondFusesAtItsPostDominator) {
  // x -> {relu, add} -> add: every path is elementwise, so all of it is one kernel.
  std::string in = R"(def @main(%x: float32[16]) -> float32[16] {
  %0 = relu(%x);
  %1 = add(%x, %x);
  %2 = relu(%1);
  add(%0, %2)
})";
  Module m = infer_type(parse_module(run(fuse_ops_pass(), in)));
  const auto* call = m.main()->body.as<CallNode>();
  ASSERT_TRUE(call && call->op.as<FunctionNode>());
  int ops = 0;
  for (const Expr& e : post_order(call->op)) ops += e.as<CallNode>() != nullptr;
  EXPECT_EQ(ops, 4);
}

TEST(FuseOps, DataMovementMakingAProductsRightOperandJoinsIt) {
  // The transpose making the right operand is inlined into the product's packing; the one making
  // the left operand stays a kernel of its own where its rows (5) are not a multiple of 16, as
  // does a transpose read as both operands.
  std::string in =
      R"(def @main(%a: float32[3, 4, 5], %b: float32[5, 4, 6], %c: float32[6, 4, 6]) -> (float32[4, 3, 6], float32[4, 6, 6]) {
  %0 = transpose(%a, perm=[1, 0, 2]);
  %1 = transpose(%b, perm=[1, 0, 2]);
  %2 = matmul(%0, %1);
  %3 = transpose(%c, perm=[1, 0, 2]);
  %4 = matmul(%3, %3);
  (%2, %4)
})";
  std::string out =
      R"(def @main(%a: float32[3, 4, 5], %b: float32[5, 4, 6], %c: float32[6, 4, 6]) -> (float32[4, 3, 6], float32[4, 6, 6]) {
  %0 = transpose(%a, perm=[1, 0, 2]);
  %1 = fn [primitive=1] (%p0: float32[5, 4, 6], %p1: float32[4, 3, 5]) -> float32[4, 3, 6] {
    %2 = transpose(%p0, perm=[1, 0, 2]);
    matmul(%p1, %2)
  };
  %3 = %1(%b, %0);
  %4 = transpose(%c, perm=[1, 0, 2]);
  %5 = matmul(%4, %4);
  (%3, %5)
})";
  EXPECT_EQ(run(fuse_ops_pass(), in), canonical(out));
}

TEST(FuseOps, DataMovementMakingAProductsLeftOperandJoinsIt) {
  // Heads merged back (a transpose and a reshape of rows of 16) are read in place by the
  // product; a left operand that is computed (relu) or moved in rows of 4 stays a kernel.
  std::string in =
      R"(def @main(%a: float32[2, 3, 16], %w: float32[32, 8], %b: float32[3, 32], %c: float32[8, 4]) -> (float32[3, 8], float32[3, 8], float32[4, 4]) {
  %0 = transpose(%a, perm=[1, 0, 2]);
  %1 = reshape(%0, shape=[3, 32]);
  %2 = matmul(%1, %w);
  %3 = relu(%b);
  %4 = matmul(%3, %w);
  %5 = transpose(%c, perm=[1, 0]);
  %6 = matmul(%5, %c);
  (%2, %4, %6)
})";
  std::string out =
      R"(def @main(%a: float32[2, 3, 16], %w: float32[32, 8], %b: float32[3, 32], %c: float32[8, 4]) -> (float32[3, 8], float32[3, 8], float32[4, 4]) {
  %0 = fn [primitive=1] (%p0: float32[2, 3, 16], %p1: float32[32, 8]) -> float32[3, 8] {
    %1 = transpose(%p0, perm=[1, 0, 2]);
    %2 = reshape(%1, shape=[3, 32]);
    matmul(%2, %p1)
  };
  %3 = %0(%a, %w);
  %4 = relu(%b);
  %5 = matmul(%4, %w);
  %6 = transpose(%c, perm=[1, 0]);
  %7 = matmul(%6, %c);
  (%3, %5, %7)
})";
  EXPECT_EQ(run(fuse_ops_pass(), in), canonical(out));
}

TEST(FuseOps, DataMovementOfSymbolicSizesJoinsAProductWhereItKeepsRows) {
  // Rows of a symbolic N: a transpose that keeps each row of 16 a row of its source joins the
  // product; heads merged into rows of 32 across N (a reshape) stay a kernel, as each element of
  // a row would divide by N in the product's reads.
  using Dim = tensor_ir::Expr;
  tensor_ir::Var n("N");
  Var a("a", tensor_type(Shape({Dim(2), Dim(n), Dim(16)}), runtime::kFloat32));
  Expr moved = call("transpose", {a}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  Expr kept = call("matmul", {moved, constant(runtime::NDArray::empty({16, 8}, runtime::kFloat32))});
  Expr merged = call("reshape", {call("transpose", {a}, {{"perm", std::vector<int64_t>{1, 0, 2}}})},
                     {{"shape", Shape({Dim(n), Dim(32)})}});
  Expr heads = call("matmul", {merged, constant(runtime::NDArray::empty({32, 8}, runtime::kFloat32))});
  PassContext ctx;
  Module m = run_passes(Module(function({a}, tuple({kept, heads}))), {infer_type_pass(), fuse_ops_pass()}, ctx);
  const auto* body = m.main()->body.as<TupleNode>();
  ASSERT_TRUE(body) << to_text(m);
  const auto* joined = body->elements[0].as<CallNode>();
  ASSERT_TRUE(joined && joined->op.as<FunctionNode>()) << to_text(m);  // transpose and product, one kernel
  const auto* alone = body->elements[1].as<CallNode>();
  ASSERT_TRUE(alone && alone->op_def()) << to_text(m);  // the product alone
  EXPECT_EQ(alone->op_def()->name, "matmul") << to_text(m);
  const auto* left = alone->args[0].as<CallNode>();
  EXPECT_TRUE(left && left->op.as<FunctionNode>()) << to_text(m);  // the transpose and reshape
}

TEST(FuseOps, AValueUsedOutsideAGroupEndsIt) {
  // %0 is an output as well as an input of the next op, so it is computed by a kernel of its own.
  std::string in = R"(def @main(%x: float32[16]) -> (float32[16], float32[16]) {
  %0 = relu(%x);
  %1 = add(%0, %0);
  (%0, %1)
})";
  Module m = infer_type(parse_module(run(fuse_ops_pass(), in)));
  const auto* t = m.main()->body.as<TupleNode>();
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->elements[0].as<CallNode>()->op_def());  // relu, not fused
}

}  // namespace
}  // namespace tessera::relay_ir

namespace tessera::relay_ir {
namespace {

TEST(SimplifyExpr, ReshapeChainsAndNoOps) {
  std::string in = R"(def @main(%x: float32[2, 3, 4]) -> float32[6, 4] {
  %0 = reshape(%x, shape=[24]);
  %1 = expand_dims(%0, axes=[0]);
  %2 = reshape(%1, shape=[6, 4]);
  %3 = reshape(%2, shape=[6, 4]);
  relu(%3)
})";
  std::string out = R"(def @main(%x: float32[2, 3, 4]) -> float32[6, 4] {
  %0 = reshape(%x, shape=[6, 4]);
  relu(%0)
})";
  EXPECT_EQ(run(simplify_expr_pass(), in), canonical(out));
}

TEST(SimplifyExpr, TransposePairsCancel) {
  std::string in = R"(def @main(%x: float32[2, 3, 4]) -> float32[2, 3, 4] {
  %0 = transpose(%x, perm=[0, 2, 1]);
  %1 = transpose(%0, perm=[0, 2, 1]);
  %2 = transpose(%1, perm=[2, 0, 1]);
  %3 = transpose(%2, perm=[1, 2, 0]);
  relu(%3)
})";
  std::string out = R"(def @main(%x: float32[2, 3, 4]) -> float32[2, 3, 4] {
  relu(%x)
})";
  EXPECT_EQ(run(simplify_expr_pass(), in), canonical(out));
}

TEST(SimplifyExpr, IdentitiesKeepBroadcasts) {
  std::string in = R"(def @main(%x: float32[2, 2], %y: float32[2]) -> (float32[2, 2], float32[2, 2]) {
  %0 = add(%x, constant(float32[2], [0, 0]));
  %1 = mul(%0, constant(float32[2, 2], [1, 1, 1, 1]));
  %2 = add(%y, constant(float32[2, 2], [0, 0, 0, 0]));
  (%1, %2)
})";
  // %2 broadcasts y to [2, 2], so it stays.
  std::string out = R"(def @main(%x: float32[2, 2], %y: float32[2]) -> (float32[2, 2], float32[2, 2]) {
  %0 = add(%y, constant(float32[2, 2], [0, 0, 0, 0]));
  (%x, %0)
})";
  EXPECT_EQ(run(simplify_expr_pass(), in), canonical(out));
}

TEST(SimplifyExpr, ErfOfAQuotientByAConstantTakesAProduct) {
  // GELU's x / 2 (sqrt(2) does not print exactly); a quotient that broadcasts x stays.
  std::string in = R"(def @main(%x: float32[3], %y: float32[]) -> (float32[3], float32[1], float32[3]) {
  %0 = erf(div(%x, constant(float32[1], [2])));
  %1 = erf(div(%y, constant(float32[1], [2])));
  %2 = erf(div(%x, constant(float32[1], [0])));
  (%0, %1, %2)
})";
  std::string out = R"(def @main(%x: float32[3], %y: float32[]) -> (float32[3], float32[1], float32[3]) {
  %0 = mul(%x, constant(float32[], [0.5]));
  %1 = erf(%0);
  %2 = div(%y, constant(float32[1], [2]));
  %3 = erf(%2);
  %4 = div(%x, constant(float32[1], [0]));
  %5 = erf(%4);
  (%1, %3, %5)
})";
  EXPECT_EQ(run(simplify_expr_pass(), in), canonical(out));
}

TEST(SimplifyExpr, APowerOfTwoScalingAProductsLeftOperandScalesTheProduct) {
  // Attention's queries / 8: the product is scaled instead. Not by 3 (rounding would differ), not
  // where the scaled operand has another reader, not for a scale that broadcasts the operand.
  std::string in =
      R"(def @main(%q: float32[4, 8], %k: float32[8, 4], %s: float32[8]) -> (float32[4, 4], float32[4, 4], float32[4, 8], float32[4, 4], float32[4, 4], float32[4, 4]) {
  %0 = matmul(div(%q, constant(float32[], [8])), %k);
  %1 = matmul(mul(%q, constant(float32[], [0.25])), %k);
  %2 = div(%q, constant(float32[], [2]));
  %3 = matmul(%2, %k);
  %4 = matmul(div(%q, constant(float32[], [3])), %k);
  %5 = matmul(mul(%s, constant(float32[4, 1], [0.5, 0.5, 0.5, 0.5])), %k);
  (%0, %1, %2, %3, %4, %5)
})";
  std::string out =
      R"(def @main(%q: float32[4, 8], %k: float32[8, 4], %s: float32[8]) -> (float32[4, 4], float32[4, 4], float32[4, 8], float32[4, 4], float32[4, 4], float32[4, 4]) {
  %0 = div(matmul(%q, %k), constant(float32[], [8]));
  %1 = mul(matmul(%q, %k), constant(float32[], [0.25]));
  %2 = div(%q, constant(float32[], [2]));
  %3 = matmul(%2, %k);
  %4 = matmul(div(%q, constant(float32[], [3])), %k);
  %5 = matmul(mul(%s, constant(float32[4, 1], [0.5, 0.5, 0.5, 0.5])), %k);
  (%0, %1, %2, %3, %4, %5)
})";
  EXPECT_EQ(run(simplify_expr_pass(), in), canonical(out));
}

TEST(RowsBeforeProducts, ATransposeOfAProductsRowsMovesOntoItsLeftOperand) {
  // batch_first attention's output projection: rows (l, n) of the product back to (n, l).
  std::string in = R"(def @main(%x: float32[6, 4], %w: float32[5, 4], %b: float32[5]) -> float32[2, 3, 5] {
  %0 = gemm(%x, %w, %b, trans_b=1);
  %1 = reshape(%0, shape=[3, 2, 5]);
  transpose(%1, perm=[1, 0, 2])
})";
  std::string out = R"(def @main(%x: float32[6, 4], %w: float32[5, 4], %b: float32[5]) -> float32[2, 3, 5] {
  %0 = reshape(%x, shape=[3, 2, 4]);
  %1 = transpose(%0, perm=[1, 0, 2]);
  %2 = matmul(%1, %w, trans_b=1);
  add(%2, %b)
})";
  EXPECT_EQ(run(rows_before_products_pass(), in), canonical(out));
}

TEST(RowsBeforeProducts, StaysWhereItWouldNotHold) {
  // The last axis moves; the product is read elsewhere; the reshape changes the last dimension;
  // a weight with batch dimensions.
  std::string in =
      R"(def @main(%x: float32[2, 3, 4], %w: float32[4, 5], %v: float32[2, 4, 5]) -> (float32[5, 3, 2], float32[2, 3, 5], float32[3, 2, 5], float32[5, 2, 3], float32[3, 2, 5]) {
  %0 = matmul(%x, %w);
  %1 = transpose(%0, perm=[2, 1, 0]);
  %2 = matmul(%x, %w);
  %3 = transpose(%2, perm=[1, 0, 2]);
  %4 = matmul(%x, %w);
  %5 = reshape(%4, shape=[2, 5, 3]);
  %6 = transpose(%5, perm=[1, 0, 2]);
  %7 = matmul(%x, %v);
  %8 = transpose(%7, perm=[1, 0, 2]);
  (%1, %2, %3, %6, %8)
})";
  std::string kept = run(rows_before_products_pass(), in);
  EXPECT_EQ(kept, canonical(in));
}

// A layer normalization written as exporters before opset 17 do (Pow(d, 2) imports as d * d).
std::string decomposed_layer_norm(const std::string& axes, const std::string& extra_use = "") {
  return R"(def @main(%x: float32[2, 3, 4]) -> float32[2, 3, 4] {
  %0 = reduce_mean(%x, axes=)" +
         axes + R"(, keepdims=1);
  %1 = sub(%x, %0);
  %2 = mul(%1, %1);
  %3 = reduce_mean(%2, axes=)" +
         axes + R"(, keepdims=1);
  %4 = add(%3, constant(float32[], [0.25]));
  %5 = sqrt(%4);
  %6 = div(%1, %5);
  %7 = mul(%6, constant(float32[4], [1, 2, 3, 4]));
  %8 = add(constant(float32[4], [5, 6, 7, 8]), %7);
  )" + (extra_use.empty() ? "%8" : "add(%8, " + extra_use + ")") +
         R"(
})";
}

TEST(LayerNormFusion, TheArithmeticOfALayerNormalizationBecomesOne) {
  // Nothing reads the statistics: the layer_norm returns y alone.
  std::string out = R"(def @main(%x: float32[2, 3, 4]) -> float32[2, 3, 4] {
  layer_norm(%x, constant(float32[4], [1, 2, 3, 4]), constant(float32[4], [5, 6, 7, 8]), axis=2, epsilon=0.25, statistics=0)
})";
  EXPECT_EQ(run(layer_norm_fusion_pass(), decomposed_layer_norm("[-1]")), canonical(out));
  // Over the last two axes, named either way.
  std::string two = R"(def @main(%x: float32[2, 3, 4]) -> float32[2, 3, 4] {
  layer_norm(%x, constant(float32[4], [1, 2, 3, 4]), constant(float32[4], [5, 6, 7, 8]), axis=1, epsilon=0.25, statistics=0)
})";
  EXPECT_EQ(run(layer_norm_fusion_pass(), decomposed_layer_norm("[2, -2]")), canonical(two));
}

TEST(LayerNormFusion, AStatisticSomethingReadsKeepsTheTuple) {
  std::string in = R"(def @main(%x: float32[2, 4], %s: float32[4]) -> (float32[2, 4], float32[2, 1]) {
  %0 = layer_norm(%x, %s);
  (%0.0, %0.1)
})";
  EXPECT_EQ(run(layer_norm_fusion_pass(), in), canonical(in));
}

TEST(LayerNormFusion, KeepsWhatIsNotOne) {
  // Not trailing axes; an intermediate value read elsewhere (the difference, the mean).
  for (const auto& [axes, use] :
       std::vector<std::pair<std::string, std::string>>{{"[1]", ""}, {"[0, 2]", ""}, {"[-1]", "%1"}, {"[-1]", "%0"}}) {
    std::string in = decomposed_layer_norm(axes, use);
    std::string got = run(layer_norm_fusion_pass(), in);
    if (use.empty()) EXPECT_EQ(got, canonical(in)) << axes;
    else EXPECT_EQ(got.find("layer_norm"), std::string::npos) << use;
  }
}

}  // namespace
}  // namespace tessera::relay_ir

namespace tessera::relay_ir {
namespace {

// Runs AlterOpLayout (opt level 3) after InferType for 64-byte vector registers (AVX-512's 32
// of them, or those given); returns the printed result.
std::string run_level3(const Pass& pass, const std::string& text, tensor_ir::ops::Registers regs = {64, 32}) {
  PassContext ctx;
  ctx.opt_level = 3;
  schedule::HardwareParams hw;
  hw.registers = regs;
  ctx.options = with_registers(ctx.options, hw);
  return to_text(run_passes(parse_module(text), {infer_type_pass(), pass}, ctx));
}

// Type inference of `text` fails with a message containing `expected`.
void expect_type_error(const std::string& text, const std::string& expected) {
  try {
    infer_type(parse_module(text));
    FAIL() << "expected a type error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// The text of a constant of `type` (e.g. "float32[16, 1, 1, 2]") holding 1, 2, ..., n.
std::string counting(const std::string& type, int n) {
  std::string text = "constant(" + type + ", [";
  for (int i = 1; i <= n; ++i) text += (i > 1 ? ", " : "") + std::to_string(i);
  return text + "])";
}

TEST(AlterOpLayout, ConstantConvWeightComesPacked) {
  // 16 output channels, a 1x2 kernel: the blocked form, in blocks of one vector (16 floats).
  std::string w = counting("float32[16, 1, 1, 2]", 32);
  std::string in = R"(def @main(%x: float32[1, 1, 4, 4]) -> float32[1, 16, 4, 3] {
  conv(%x, )" + w + R"()
})";
  std::string out = R"(def @main(%x: float32[1, 1, 4, 4]) -> float32[1, 16, 4, 3] {
  %0 = conv_pack_weight()" +
                    w + R"(, block=16);
  conv(%x, %0, packed_channels=16, vector_bytes=64, vector_registers=32)
})";
  EXPECT_EQ(run_level3(alter_op_layout_pass(), in), canonical(out));
  // For AVX2's 32-byte registers, two vectors of 8 channels, and the call says so.
  std::string avx2 = R"(def @main(%x: float32[1, 1, 4, 4]) -> float32[1, 16, 4, 3] {
  %0 = conv_pack_weight()" +
                     w + R"(, block=16);
  conv(%x, %0, packed_channels=16, vector_bytes=32, vector_registers=16)
})";
  EXPECT_EQ(run_level3(alter_op_layout_pass(), in, {32, 16}), canonical(avx2));
}

TEST(AlterOpLayout, PointwiseConvWeightComesInRowTiles) {
  // A 1x1 convolution over 16 positions is a matrix product whose rows are the 12 output
  // channels: its weight comes in blocks of the 8 rows of a register tile (the last one padded).
  std::string w = counting("float32[12, 2, 1, 1]", 24);
  std::string in = R"(def @main(%x: float32[1, 2, 4, 4]) -> float32[1, 12, 4, 4] {
  conv(%x, )" + w + R"()
})";
  std::string out = R"(def @main(%x: float32[1, 2, 4, 4]) -> float32[1, 12, 4, 4] {
  %0 = conv_pack_weight()" +
                    w + R"(, block=8);
  conv(%x, %0, packed_channels=12, vector_bytes=64, vector_registers=32)
})";
  EXPECT_EQ(run_level3(alter_op_layout_pass(), in), canonical(out));
  Module m = infer_type(parse_module(out));
  EXPECT_EQ(to_string(m.main()->body.as<CallNode>()->args[1]->checked_type), "float32[2, 2, 1, 1, 8]");
}

TEST(AlterOpLayout, ThreeByThreeConvWeightComesWinogradTransformed) {
  // Stride 1, 8 input and 16 output channels, 12x12 outputs (9 tiles of 4x4): F(4x4, 3x3), its
  // transformed weight in 36 x one panel of 16 columns.
  std::string w = counting("float32[16, 8, 3, 3]", 16 * 8 * 9);
  std::string in = R"(def @main(%x: float32[1, 8, 12, 12]) -> float32[1, 16, 12, 12] {
  conv(%x, )" + w + R"(, pads=[1, 1, 1, 1])
})";
  std::string out = R"(def @main(%x: float32[1, 8, 12, 12]) -> float32[1, 16, 12, 12] {
  %0 = conv_winograd_weight()" +
                    w + R"(, vector_bytes=64, vector_registers=32);
  conv(%x, %0, packed_channels=16, pads=[1, 1, 1, 1], vector_bytes=64, vector_registers=32)
})";
  EXPECT_EQ(run_level3(alter_op_layout_pass(), in), canonical(out));
  Module m = infer_type(parse_module(out));
  EXPECT_EQ(to_string(m.main()->body.as<CallNode>()->args[1]->checked_type), "float32[36, 1, 8, 16]");
  // A weight's packing says its form: the same panels serve 8x8 outputs too (4 tiles, where the
  // pass would pack the weight in blocks), and panels of other channels are refused.
  infer_type(parse_module(R"(def @main(%x: float32[1, 8, 8, 8], %w: float32[36, 1, 8, 16]) {
  conv(%x, %w, packed_channels=16, pads=[1, 1, 1, 1], vector_bytes=64, vector_registers=32)
})"));
  expect_type_error(R"(def @main(%x: float32[1, 8, 8, 8], %w: float32[36, 1, 4, 16]) {
  conv(%x, %w, packed_channels=16, pads=[1, 1, 1, 1], vector_bytes=64, vector_registers=32)
})",
                    "weight (16, 4, 3, 3) expects 4 input channels");
}

// AlterOpLayout (level 3, 64-byte registers) on a convolution of `data` with a [64, 64, 3, 3]
// constant weight and 1-pixel pads.
Module winograd_conv_altered(const Shape& data) {
  runtime::NDArray w = runtime::NDArray::empty({64, 64, 3, 3}, runtime::kFloat32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data_as<float>()[i] = static_cast<float>(i % 7);
  Var x("x", tensor_type(data, runtime::kFloat32));
  Module m(function({x}, call("conv", {x, constant(w)}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})));
  PassContext ctx;
  ctx.opt_level = 3;
  schedule::HardwareParams hw;
  hw.registers = {64, 32};
  ctx.options = with_registers(ctx.options, hw);
  return infer_type(run_passes(m, {infer_type_pass(), alter_op_layout_pass()}, ctx));
}

TEST(AlterOpLayout, ConvWinogradAtSomeSizesOnlyReadsBothPackings) {
  // 7x7 outputs, 64 channels in and out, a batch of N: Winograd's 4 tiles per image pay from 3
  // images on, so the blocked packing goes beside the Winograd one, after a bias of zeros.
  using Dim = tensor_ir::Expr;
  Module m = winograd_conv_altered(Shape({Dim(tensor_ir::Var("N")), Dim(64), Dim(7), Dim(7)}));
  const auto* conv = m.main()->body.as<CallNode>();
  ASSERT_EQ(conv->args.size(), 4u);
  EXPECT_EQ(to_string(conv->args[1]->checked_type), "float32[36, 2, 64, 32]");
  EXPECT_EQ(to_string(conv->args[2]->checked_type), "float32[64]");
  EXPECT_EQ(to_string(conv->args[3]->checked_type), "float32[2, 64, 3, 3, 32]");
  // At a batch of 4 or 1 the sizes decide: the Winograd packing, or the blocked one, alone.
  EXPECT_EQ(to_string(winograd_conv_altered(Shape({4, 64, 7, 7})).main()->body.as<CallNode>()->args[1]->checked_type),
            "float32[36, 2, 64, 32]");
  EXPECT_EQ(winograd_conv_altered(Shape({4, 64, 7, 7})).main()->body.as<CallNode>()->args.size(), 2u);
  EXPECT_EQ(to_string(winograd_conv_altered(Shape({1, 64, 7, 7})).main()->body.as<CallNode>()->args[1]->checked_type),
            "float32[2, 64, 3, 3, 32]");
  // Both packings must be of one weight, the first Winograd's, the second in blocks.
  const std::string both = R"(def @main(%x: float32[4, 64, 7, 7], %u: float32[36, 2, 64, 32], %b: float32[64], %d: float32D) {
  conv(%x, %u, %b, %d, packed_channels=64, pads=[1, 1, 1, 1], vector_bytes=64, vector_registers=32)
})";
  infer_type(parse_module(std::string(both).replace(both.find("D)"), 1, "[2, 64, 3, 3, 32]")));
  expect_type_error(std::string(both).replace(both.find("D)"), 1, "[2, 32, 3, 3, 32]"),
                    "weight (64, 32, 3, 3) expects 32 input channels");
  expect_type_error(std::string(both).replace(both.find("D)"), 1, "[36, 2, 64, 32]"),
                    "a direct weight float32(36, 2, 64, 32) goes beside a Winograd packing");
}

TEST(AlterOpLayout, ProductsPackTheirConstantRightOperand) {
  // gemm's transposed B is packed transposed; a weight computed from constants counts as one.
  std::string b = counting("float32[16, 2]", 32);
  std::string in = R"(def @main(%a: float32[1, 2], %c: float32[3, 2]) -> (float32[1, 16], float32[3, 16]) {
  %0 = gemm(%a, )" +
                   b + R"(, trans_b=1);
  %1 = transpose()" +
                   b + R"(, perm=[1, 0]);
  %2 = matmul(%c, %1);
  (%0, %2)
})";
  std::string out = R"(def @main(%a: float32[1, 2], %c: float32[3, 2]) -> (float32[1, 16], float32[3, 16]) {
  %0 = matmul_pack_weight()" +
                    b + R"(, trans=1, vector_bytes=64, vector_registers=32);
  %1 = gemm(%a, %0, packed_columns=16, vector_bytes=64, vector_registers=32);
  %2 = transpose()" +
                    b + R"(, perm=[1, 0]);
  %3 = matmul_pack_weight(%2, vector_bytes=64, vector_registers=32);
  %4 = matmul(%c, %3, packed_columns=16, vector_bytes=64, vector_registers=32);
  (%1, %4)
})";
  EXPECT_EQ(run_level3(alter_op_layout_pass(), in), canonical(out));
}

TEST(AlterOpLayout, LeavesWeightsItCannotPrepack) {
  // A weight that is an input; a depthwise convolution (it reads its weight as it is); a
  // product narrower than a vector.
  std::string in = R"(def @main(%x: float32[1, 2, 4, 4], %w: float32[16, 2, 1, 2], %a: float32[4, 2])
    -> (float32[1, 16, 4, 3], float32[1, 2, 4, 3], float32[4, 3]) {
  %0 = conv(%x, %w);
  %1 = conv(%x, )" +
                   counting("float32[2, 1, 1, 2]", 4) + R"(, groups=2);
  %2 = matmul(%a, )" +
                   counting("float32[2, 3]", 6) + R"();
  (%0, %1, %2)
})";
  EXPECT_EQ(run_level3(alter_op_layout_pass(), in), canonical(in));
}

TEST(AlterOpLayout, PackedShapesAreChecked) {
  // Blocks of 16 for 16 channels: one block, not two.
  std::string text = R"(def @main(%x: float32[1, 1, 4, 4], %w: float32[2, 1, 1, 2, 16]) {
  conv(%x, %w, packed_channels=16, vector_bytes=64, vector_registers=32)
})";
  expect_type_error(text, "conv_pack_weight(block=16) of a (16, 1, 1, 2) weight gives (1, 1, 1, 2, 16)");
  // 8 channels packed in a block of one AVX2 vector, read by a kernel sized for AVX-512 (which
  // reads so few channels unpacked): refused.
  std::string other = R"(def @main(%x: float32[1, 1, 4, 4], %w: float32[1, 1, 1, 2, 8]) {
  conv(%x, %w, packed_channels=8, vector_bytes=64, vector_registers=32)
})";
  expect_type_error(other, "for 64-byte vector registers (it reads its weight unpacked");
}

TEST(FoldBatchNorm, IntoConvolutionWeightsAndBias) {
  std::string params = R"(constant(float32[2], [1, 2]), constant(float32[2], [3, 4]),
      constant(float32[2], [5, 6]), constant(float32[2], [7, 8]))";
  std::string in = R"(def @main(%x: float32[1, 1, 3, 3]) -> float32[1, 2, 3, 3] {
  %0 = conv(%x, constant(float32[2, 1, 1, 1], [1, 2]), constant(float32[2], [9, 10]));
  batch_norm(%0, )" +
                   params + R"(, epsilon=0.5)
})";
  // s = scale / sqrt(var + eps); W * s per output channel; (b - mean) * s + bias.
  std::string out = R"(def @main(%x: float32[1, 1, 3, 3]) -> float32[1, 2, 3, 3] {
  %0 = add(constant(float32[2], [7, 8]), constant(float32[], [0.5]));
  %1 = sqrt(%0);
  %2 = div(constant(float32[2], [1, 2]), %1);
  %3 = reshape(%2, shape=[2, 1, 1, 1]);
  %4 = mul(constant(float32[2, 1, 1, 1], [1, 2]), %3);
  %5 = sub(constant(float32[2], [9, 10]), constant(float32[2], [5, 6]));
  %6 = mul(%5, %2);
  %7 = add(%6, constant(float32[2], [3, 4]));
  conv(%x, %4, %7)
})";
  EXPECT_EQ(run(fold_batch_norm_pass(), in), canonical(out));
}

TEST(FoldBatchNorm, IntoProducts) {
  std::string params = R"(constant(float32[3], [1, 2, 3]), constant(float32[3], [4, 5, 6]),
      constant(float32[3], [7, 8, 9]), constant(float32[3], [1, 1, 1]))";
  std::string b = "constant(float32[2, 3], [1, 2, 3, 4, 5, 6])";
  std::string in = R"(def @main(%a: float32[4, 2]) -> (float32[4, 3], float32[4, 3]) {
  %0 = gemm(%a, )" +
                   b + R"(, constant(float32[3], [1, 1, 1]), beta=2);
  %1 = batch_norm(%0, )" +
                   params + R"();
  %2 = matmul(%a, )" +
                   b + R"();
  %3 = batch_norm(%2, )" +
                   params + R"();
  (%1, %3)
})";
  // gemm: B's columns scaled, C' = (beta * C - mean) * s + bias with beta 1; matmul: B's
  // columns scaled, then + (bias - mean * s). Each builds its own s (CSE merges them later).
  std::string out = R"(def @main(%a: float32[4, 2]) -> (float32[4, 3], float32[4, 3]) {
  %0 = add(constant(float32[3], [1, 1, 1]), constant(float32[], [1e-05]));
  %1 = sqrt(%0);
  %2 = div(constant(float32[3], [1, 2, 3]), %1);
  %3 = mul()" + b + R"(, %2);
  %4 = mul(constant(float32[3], [1, 1, 1]), constant(float32[], [2]));
  %5 = sub(%4, constant(float32[3], [7, 8, 9]));
  %6 = mul(%5, %2);
  %7 = add(%6, constant(float32[3], [4, 5, 6]));
  %8 = gemm(%a, %3, %7);
  %9 = add(constant(float32[3], [1, 1, 1]), constant(float32[], [1e-05]));
  %10 = sqrt(%9);
  %11 = div(constant(float32[3], [1, 2, 3]), %10);
  %12 = mul()" + b + R"(, %11);
  %13 = matmul(%a, %12);
  %14 = neg(constant(float32[3], [7, 8, 9]));
  %15 = mul(%14, %11);
  %16 = add(%15, constant(float32[3], [4, 5, 6]));
  %17 = add(%13, %16);
  (%8, %17)
})";
  EXPECT_EQ(run(fold_batch_norm_pass(), in), canonical(out));
}

TEST(FoldBatchNorm, KeepsAProductReadElsewhere) {
  // The convolution's own value is an output too, so it cannot absorb the normalization.
  std::string in = R"(def @main(%x: float32[1, 1, 3, 3]) -> (float32[1, 1, 3, 3], float32[1, 1, 3, 3]) {
  %0 = conv(%x, constant(float32[1, 1, 1, 1], [2]));
  %1 = batch_norm(%0, constant(float32[1], [1]), constant(float32[1], [0]), constant(float32[1], [0]),
                  constant(float32[1], [1]));
  (%0, %1)
})";
  EXPECT_EQ(run(fold_batch_norm_pass(), in), canonical(in));
}

}  // namespace
}  // namespace tessera::relay_ir
