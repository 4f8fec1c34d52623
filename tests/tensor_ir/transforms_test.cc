// Lowering passes on hand-written statements: loop partitioning, unswitched clamps,
// vectorization, storage flattening with storage_align, and the legalization before code
// generation.
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/parallel_work.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/transforms/legalize.h"
#include "tensor_ir/transforms/loop_partition.h"
#include "tensor_ir/transforms/narrow_types.h"
#include "tensor_ir/transforms/storage_flatten.h"
#include "tensor_ir/transforms/unswitch_clamps.h"
#include "tensor_ir/transforms/vectorize.h"

namespace tessera::tensor_ir {
namespace {

using runtime::kFloat32;

Buffer buffer(const std::string& name, int64_t size) {
  return BufferNode::make(name, kFloat32, {Expr(size)}, MemoryScope::Global);
}

// for io in [0, 13): for ii in [0, 8): if likely(io*8 + ii < 100): A[io*8 + ii] = 1
Stmt guarded_loop(const Buffer& a, ForKind inner_kind) {
  Var io("io"), ii("ii");
  Expr idx = io * 8 + ii;
  Stmt store = Store::make(a, make_const(kFloat32, 1), idx);
  Stmt guarded = IfThenElse::make(call(Intrinsic::likely, {idx < 100}), store);
  return For::make(io, Expr(0), Expr(13), ForKind::Serial, For::make(ii, Expr(0), Expr(8), inner_kind, guarded));
}

TEST(LoopPartition, SplitsOffTheTail) {
  Buffer a = buffer("A", 100);
  Stmt s = arith::simplify(legalize_for_codegen(arith::simplify(partition_loops(guarded_loop(a, ForKind::Serial)))));
  EXPECT_EQ(to_string(s),
            "for (io, 0, 12) {\n"
            "  for (ii, 0, 8) {\n"
            "    A[io*8 + ii] = 1.0f\n"
            "  }\n"
            "}\n"
            "for (ii, 0, 4) {\n"
            "  A[ii + 96] = 1.0f\n"
            "}\n");
}

TEST(LoopPartition, LeavesUnmarkedConditionsAlone) {
  Buffer a = buffer("A", 10);
  Var i("i");
  Stmt s = For::make(i, Expr(0), Expr(10), ForKind::Serial,
                     IfThenElse::make(i < 5, Store::make(a, make_const(kFloat32, 1), i)));
  EXPECT_TRUE(partition_loops(s).same_as(s));
}

// for io in [0, (n + 15) // 16): vectorized ii in [0, 16): A[io*16 + ii] = select(likely(io*16 + ii < n), B[..], 0)
TEST(LoopPartition, MaskedSelectsSplitTheOuterLoopAndStayVectors) {
  Var io("io"), ii("ii"), n("n");
  Buffer a = BufferNode::make("A", kFloat32, {n}, MemoryScope::Global);
  Buffer b = BufferNode::make("B", kFloat32, {n}, MemoryScope::Global);
  Expr idx = io * 16 + ii;
  Stmt store =
      Store::make(a, select(call(Intrinsic::likely, {idx < n}), Load::make(b, idx), make_const(kFloat32, 0)), idx);
  Stmt s = For::make(io, Expr(0), floordiv(n + 15, Expr(16)), ForKind::Serial,
                     For::make(ii, Expr(0), Expr(16), ForKind::Vectorized, store));
  arith::BoundMap known{{n.get(), arith::ConstBound{0, arith::ConstBound::kPosInf}}};
  EXPECT_EQ(to_string(arith::simplify(vectorize_loops(partition_loops(s, known)), known)),
            "for (io, 0, n // 16) {\n"
            "  A[ramp(io*16, 1, 16)] = B[ramp(io*16, 1, 16)]\n"
            "}\n"
            "for (io, n // 16, (n + 15) // 16 - n // 16) {\n"
            "  A[ramp(io*16, 1, 16)] = select(likely(ramp(io*16, 1, 16) < x16(n)), B[ramp(io*16, 1, 16)], x16(0.0f))\n"
            "}\n");
}
// for t in [0, (m + 7) // 8): for i in [0, 8): C[t*8 + i] = A[min(t*8 + i, m - 1)] + A[min(t, 3)]
TEST(UnswitchClamps, TilesBeforeTheLastReadUnclamped) {
  Var t("t"), i("i"), m("m");
  Buffer a = BufferNode::make("A", kFloat32, {m}, MemoryScope::Global);
  Buffer c = BufferNode::make("C", kFloat32, {m}, MemoryScope::Global);
  Stmt body = Store::make(c, Load::make(a, min(t * 8 + i, m - 1)) + Load::make(a, min(t, Expr(3))), t * 8 + i);
  Stmt s = For::make(t, Expr(0), floordiv(m + 7, Expr(8)), ForKind::Parallel,
                     For::make(i, Expr(0), Expr(8), ForKind::Unrolled, body));
  EXPECT_EQ(to_string(arith::simplify(unswitch_clamps(s))),
            "parallel (t, 0, (m + 7) // 8) {\n"
            "  if (t*8 + 7 <= m - 1) {\n"
            "    unrolled (i, 0, 8) {\n"
            "      C[t*8 + i] = A[t*8 + i] + A[min(t, 3)]\n"
            "    }\n"
            "  } else {\n"
            "    unrolled (i, 0, 8) {\n"
            "      C[t*8 + i] = A[min(t*8 + i, m - 1)] + A[min(t, 3)]\n"
            "    }\n"
            "  }\n"
            "}\n");
  // A clamp that every tile needs (a bound below the tile's reach) stays, with no branch.
  Stmt always = For::make(
      t, Expr(0), Expr(4), ForKind::Serial,
      For::make(i, Expr(0), Expr(8), ForKind::Serial, Store::make(c, Load::make(a, min(t * 8 + i, Expr(5))), i)));
  EXPECT_EQ(to_string(unswitch_clamps(always)), to_string(always));
}

// parallel for f in [0, 2*T), T = (m + 15) // 16: for r in [0, 2): for j in [0, 16):
//   if (likely(f // T * 2 + r < 3)) if (likely(f % T*16 + j < m)) C[(f // T*2 + r)*m + f % T*16 + j] = 1
// (a 3 x m result in tiles of 2 x 16, the tile's row and column fused into f)
TEST(UnswitchTileGuards, WholeTilesWriteUnguarded) {
  Var f("f"), r("r"), j("j"), m("m");
  Buffer c = BufferNode::make("C", kFloat32, {m * 3}, MemoryScope::Global);
  Expr tiles = floordiv(m + 15, Expr(16)), row = floordiv(f, tiles) * 2 + r, col = floormod(f, tiles) * 16 + j;
  Stmt write = Store::make(c, make_const(kFloat32, 1), row * m + col);
  Stmt guarded =
      IfThenElse::make(call(Intrinsic::likely, {row < 3}), IfThenElse::make(call(Intrinsic::likely, {col < m}), write));
  Stmt s = For::make(
      f, Expr(0), tiles * 2, ForKind::Parallel,
      For::make(r, Expr(0), Expr(2), ForKind::Serial, For::make(j, Expr(0), Expr(16), ForKind::Serial, guarded)));
  const arith::BoundMap sizes{{m.get(), {0, arith::ConstBound::kPosInf}}};
  const std::string unswitched = to_string(arith::simplify(unswitch_tile_guards(s, sizes), sizes));
  EXPECT_NE(unswitched.find("  if (f % ((m + 15) // 16)*16 + 15 < m && f // ((m + 15) // 16)*2 + 1 < 3) {\n"
                            "    for (r, 0, 2) {\n"
                            "      for (j, 0, 16) {\n"
                            "        C["),
            std::string::npos)
      << unswitched;
  EXPECT_NE(unswitched.find("  } else {\n    for (r, 0, 2) {\n      for (j, 0, 16) {\n        if (likely("),
            std::string::npos)
      << unswitched;
  // A guard linear in the outermost loop's variable is left to loop partitioning.
  Var t("t");
  Stmt linear = For::make(t, Expr(0), tiles, ForKind::Serial,
                          For::make(j, Expr(0), Expr(16), ForKind::Serial,
                                    IfThenElse::make(call(Intrinsic::likely, {t * 16 + j < m}),
                                                     Store::make(c, make_const(kFloat32, 1), t * 16 + j))));
  EXPECT_EQ(to_string(unswitch_tile_guards(linear, sizes)), to_string(linear));
}

// parallel for f in [0, T), T = (m + 13) // 14 tiles of m = n*h rows, t = f % T (a tile index
// fused with others, nonlinear in f): for i in [0, min(t*14 + 13, R - 1) + 1 - t*14): P[i] = i, the
// tile's rows of a producer that computes R = (m + 6) // 7 * 7 rows (7s), then for i in [0, 14):
// if (likely(t*14 + i < m)) C[t*14 + i] = P[i].
TEST(UnswitchTileGuards, WholeTilesKeepTheirExtentConstant) {
  Var f("f"), i("i"), n("n"), h("h");
  Expr m = n * h, tiles = floordiv(m + 13, Expr(14)), tile = floormod(f, tiles);
  Buffer p = BufferNode::make("P", kFloat32, {Expr(14)}, MemoryScope::Local);
  Buffer c = BufferNode::make("C", kFloat32, {m}, MemoryScope::Global);
  Expr extent = min(tile * 14 + 13, floordiv(m + 6, Expr(7)) * 7 - 1) + 1 - tile * 14;
  Stmt produce = For::make(i, Expr(0), extent, ForKind::Unrolled, Store::make(p, cast(kFloat32, i), i));
  Stmt write = Store::make(c, Load::make(p, i), tile * 14 + i);
  Stmt consume = For::make(i, Expr(0), Expr(14), ForKind::Unrolled,
                           IfThenElse::make(call(Intrinsic::likely, {tile * 14 + i < m}), write));
  Stmt s = For::make(f, Expr(0), tiles * 2, ForKind::Parallel, Block::make({produce, consume}));
  const arith::BoundMap sizes{{n.get(), {0, arith::ConstBound::kPosInf}}, {h.get(), {0, arith::ConstBound::kPosInf}}};
  const std::string unswitched = to_string(arith::simplify(unswitch_tile_guards(s, sizes), sizes));
  // Where the whole tile lies inside (the first branch), its producer's loop is 14 long.
  EXPECT_NE(unswitched.find(" {\n    unrolled (i, 0, 14) {\n      P[i] = float32(i)"), std::string::npos) << unswitched;
}

// for f in [0, 4*65): for j in [0, 8) (vectorized or not): if (likely(f % 65*8 + j < 513))
//   C[f // 65*513 + f % 65*8 + j] = 1 (4 rows of 513 in vectors of 8, the row and vector fused)
TEST(UnswitchTileGuards, StaticKernelsUnswitchOnlyGuardsOfVectors) {
  Var f("f"), j("j");
  Buffer c = BufferNode::make("C", kFloat32, {Expr(4 * 513)}, MemoryScope::Global);
  Expr col = floormod(f, Expr(65)) * 8 + j;
  auto nest = [&](ForKind kind) {
    Stmt write = Store::make(c, make_const(kFloat32, 1), floordiv(f, Expr(65)) * 513 + col);
    return For::make(
        f, Expr(0), Expr(4 * 65), ForKind::Serial,
        For::make(j, Expr(0), Expr(8), kind, IfThenElse::make(call(Intrinsic::likely, {col < 513}), write)));
  };
  const std::string vectors = to_string(arith::simplify(unswitch_tile_guards(nest(ForKind::Vectorized))));
  EXPECT_NE(vectors.find("  if (f % 65*8 + 7 < 513) {\n    vectorized (j, 0, 8) {\n      C["), std::string::npos)
      << vectors;
  // A serial loop gains nothing (partitioning splits it), and the copy costs compilation time.
  EXPECT_EQ(to_string(unswitch_tile_guards(nest(ForKind::Serial))), to_string(nest(ForKind::Serial)));
}

// parallel for t in [0, (m + 7) // 8): { for i in [0, min(8, m - t*8)): C[t*8 + i] = 0
//                                        for r in [0, n): C[t*8 .. +8] = 1 (8 lanes) }
TEST(ParallelWork, StoresCountedWithTheirLanesAndInnerExtentsByTheirBounds) {
  Var t("t"), i("i"), r("r"), m("m"), n("n");
  Buffer c = BufferNode::make("C", kFloat32, {m}, MemoryScope::Global);
  Stmt tail = For::make(i, Expr(0), min(Expr(8), m - t * 8), ForKind::Serial,
                        Store::make(c, make_const(kFloat32, 0), t * 8 + i));
  Stmt vector = For::make(r, Expr(0), n, ForKind::Serial,
                          Store::make(c, Broadcast::make(make_const(kFloat32, 1), 8), Ramp::make(t * 8, Expr(1), 8)));
  Stmt body = Block::make({tail, vector});
  Expr tiles = floordiv(m + 7, Expr(8));
  Stmt marked = For::make(t, Expr(0), tiles, ForKind::Parallel, body, {{kParallelMinWork, 4096}});
  EXPECT_EQ(to_string(stored_values(For::make(t, Expr(0), tiles, ForKind::Serial, body))), "(m + 7) // 8*(n*8 + 8)");
  EXPECT_EQ(to_string(worth_parallel_launch(marked.as<For>())), "(m + 7) // 8*(n*8 + 8) >= 4096");
  // Unmarked, a loop is always worth it; an inner extent without a bound cannot be counted.
  Stmt unmarked = For::make(t, Expr(0), tiles, ForKind::Parallel, body);
  EXPECT_FALSE(worth_parallel_launch(unmarked.as<For>()).defined());
  Stmt unbounded = For::make(i, Expr(0), m - t, ForKind::Serial, Store::make(c, make_const(kFloat32, 0), i));
  EXPECT_FALSE(stored_values(For::make(t, Expr(0), m, ForKind::Serial, unbounded)).defined());
}

TEST(Vectorize, MainBodyBecomesVectorCode) {
  Buffer a = buffer("A", 100);
  Stmt s = arith::simplify(partition_loops(guarded_loop(a, ForKind::Vectorized)));
  s = arith::simplify(legalize_for_codegen(vectorize_loops(s)));
  EXPECT_EQ(to_string(s),
            "for (io, 0, 12) {\n"
            "  A[ramp(io*8, 1, 8)] = x8(1.0f)\n"
            "}\n"
            "A[ramp(96, 1, 4)] = x4(1.0f)\n");
}

TEST(Vectorize, BranchOnTheLoopVariableGuardsTheStoresLanes) {
  Buffer a = buffer("A", 8);
  Var i("i");
  Stmt s = For::make(i, Expr(0), Expr(8), ForKind::Vectorized,
                     IfThenElse::make(i < 5, Store::make(a, make_const(kFloat32, 1), i)));
  EXPECT_EQ(to_string(vectorize_loops(s)), "if (ramp(0, 1, 8) < x8(5)) {\n  A[ramp(0, 1, 8)] = x8(1.0f)\n}\n");
  // Guards nested around the store (a tile's row and column) guard it together.
  Var j("j");
  Stmt nested = For::make(i, Expr(0), Expr(8), ForKind::Vectorized,
                          IfThenElse::make(i < 5, IfThenElse::make(j < 3, Store::make(a, make_const(kFloat32, 1), i))));
  EXPECT_EQ(to_string(vectorize_loops(nested)),
            "if (ramp(0, 1, 8) < x8(5) && x8(j < 3)) {\n  A[ramp(0, 1, 8)] = x8(1.0f)\n}\n");
  // Two sides, or more than a store, stay scalar.
  Stmt two = For::make(
      i, Expr(0), Expr(8), ForKind::Vectorized,
      IfThenElse::make(i < 5, Store::make(a, make_const(kFloat32, 1), i), Store::make(a, make_const(kFloat32, 2), i)));
  EXPECT_EQ(to_string(vectorize_loops(two)).rfind("for (i, 0, 8)", 0), 0u);
}

TEST(Vectorize, AccumulatingIntoOneElementBecomesATree) {
  // A[0] = A[0] op B[i] over 8 lanes: lanes k and k + 4 first, then k and k + 2, then the two left.
  Buffer a = buffer("A", 1), b = buffer("B", 8);
  Var i("i");
  auto loop = [&](Expr value, int64_t extent) {
    return For::make(i, Expr(2), Expr(extent), ForKind::Vectorized, Store::make(a, value, Expr(0)));
  };
  EXPECT_EQ(to_string(arith::simplify(vectorize_loops(loop(Load::make(a, Expr(0)) + Load::make(b, i - 2), 8)))),
            "A[0] = A[0] + (B[0] + B[4] + (B[2] + B[6]) + (B[1] + B[5] + (B[3] + B[7])))\n");
  EXPECT_EQ(to_string(arith::simplify(vectorize_loops(loop(max(Load::make(a, Expr(0)), Load::make(b, i - 2)), 2)))),
            "A[0] = max(A[0], max(B[0], B[1]))\n");
  // Not a power of two, not a reduction (the accumulator is not the first operand, it is a
  // difference, the term reads it: A[0] + A[0] * B[i] grows lane after lane), or a store every lane
  // would race on: the loop stays scalar.
  for (const Stmt& s :
       {loop(Load::make(a, Expr(0)) + Load::make(b, i - 2), 6), loop(Load::make(b, i - 2) + Load::make(a, Expr(0)), 8),
        loop(Load::make(a, Expr(0)) - Load::make(b, i - 2), 8),
        loop(Load::make(a, Expr(0)) + Load::make(a, Expr(0)) * Load::make(b, i - 2), 8), loop(Load::make(b, i - 2), 8)})
    EXPECT_EQ(vectorize_loops(s).as<For>()->for_kind, ForKind::Serial) << to_string(s);
}

TEST(StorageFlatten, ArgumentsAreRowMajorAndRealizesAllocate) {
  Tensor A = placeholder({Expr(4), Expr(6)}, kFloat32, "A");
  Tensor T = compute(
      {Expr(4), Expr(6)}, [&](const std::vector<Var>& i) { return A(i[0], i[1]); }, "T");
  Var i("i"), j("j");
  Stmt body = For::make(
      i, Expr(0), Expr(2), ForKind::Serial,
      For::make(j, Expr(0), Expr(3), ForKind::Serial, ProducerStore::make(T, A(i + 2, j + 3), {i + 2, j + 3})));
  Stmt realize = Realize::make(T, {Range(Expr(2), Expr(2)), Range(Expr(3), Expr(3))}, body);
  FlattenOptions options;
  options.args.emplace_back(A, buffer("A", 24));
  options.storage_align[T.get()] = {{8, 1}, {0, 0}};
  Stmt s = arith::simplify(storage_flatten(realize, options));
  // T's rows are padded from 3 to 9 elements (9 % 8 == 1); its origin is (2, 3).
  EXPECT_EQ(to_string(s),
            "allocate T: float32[12] (local)\n"
            "for (i, 0, 2) {\n"
            "  for (j, 0, 3) {\n"
            "    T[i*9 + j] = A[i*6 + j + 15]\n"
            "  }\n"
            "}\n");
  FlattenOptions no_args;
  EXPECT_THROW(storage_flatten(body, no_args), Error);
}

TEST(Legalize, UnrolledLoopsWithSymbolicExtentRunSerially) {
  Buffer a = buffer("A", 8);
  Var i("i"), n("n");
  Stmt s = For::make(i, Expr(0), n, ForKind::Unrolled, Store::make(a, make_const(kFloat32, 1), i));
  EXPECT_EQ(legalize_for_codegen(s).as<For>()->for_kind, ForKind::Serial);
  Stmt c = For::make(i, Expr(0), Expr(4), ForKind::Unrolled, Store::make(a, make_const(kFloat32, 1), i));
  EXPECT_EQ(legalize_for_codegen(c).as<For>()->for_kind, ForKind::Unrolled);
}

// Narrow types: loads decode and stores encode, in the compute type; a copy moves the bits.
TEST(NarrowTypes, LoadsDecodeStoresEncodeCopiesMoveBits) {
  const DataType bf16 = runtime::kBFloat16, e4m3(runtime::TypeCode::Float8E4M3FN, 8);
  Buffer a = BufferNode::make("A", bf16, {Expr(4)}, MemoryScope::Global);
  Buffer b = BufferNode::make("B", bf16, {Expr(4)}, MemoryScope::Global);
  Buffer c = BufferNode::make("C", e4m3, {Expr(4)}, MemoryScope::Global);
  Var i("i");
  Stmt copy = lower_narrow_types(Store::make(b, Load::make(a, i), i));
  EXPECT_EQ(to_string(copy), "B[i] = A[i]\n");
  Stmt chosen = lower_narrow_types(Store::make(b, select(i < 2, Load::make(a, i), Load::make(b, i - 2)), i));
  EXPECT_EQ(to_string(chosen), "B[i] = select(i < 2, A[i], B[i - 2])\n");  // moved, not converted
  Stmt add = lower_narrow_types(Store::make(b, Load::make(a, i) + Load::make(a, i), i));
  const auto* store = add.as<Store>();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->value.type(), bf16);  // the encoded sum
  const std::string text = to_string(add);
  EXPECT_NE(text.find("shift_left(uint32(reinterpret(A[i]))"), std::string::npos) << text;  // decoded
  Stmt convert = lower_narrow_types(Store::make(c, cast(e4m3, Load::make(a, i)), i));
  EXPECT_EQ(convert.as<Store>()->value.type(), e4m3);
  // A Cast to a narrow type inside an expression rounds: its value is the compute type's.
  Buffer f = BufferNode::make("F", kFloat32, {Expr(4)}, MemoryScope::Global);
  Stmt rounded = lower_narrow_types(Store::make(f, cast(kFloat32, cast(bf16, Load::make(f, i))), i));
  EXPECT_EQ(rounded.as<Store>()->value.type(), kFloat32);
  EXPECT_NE(to_string(rounded).find("reinterpret"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tensor_ir
