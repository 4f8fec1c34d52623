// Graph passes on small graphs written in the text format: input and expected output.
#include <gtest/gtest.h>

#include "relay_ir/functor.h"
#include "relay_ir/parser.h"
#include "relay_ir/printer.h"
#include "relay_ir/structural.h"
#include "relay_ir/transforms/infer_type.h"
#include "relay_ir/transforms/passes.h"

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

}  // namespace
}  // namespace tessera::relay_ir
