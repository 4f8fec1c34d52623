// Numerics of hand-written lowered kernels: loops of every kind, vector and gathered memory
// accesses, local buffers, the storage types (float16, bool, narrow integers) and integer division.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kernel_builder.h"
#include "runtime/error.h"
#include "runtime/half.h"

namespace tessera::targets::testing {
namespace {

using runtime::kFloat32;
using runtime::kInt64;

std::vector<float> iota_f32(size_t n, float start = 0, float step = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

TEST(CodeGen, ScalarLoop) {
  Buffer A = make_buffer("A", kFloat32, {100}), B = make_buffer("B", kFloat32, {100}),
         C = make_buffer("C", kFloat32, {100});
  Var i("i");
  LoweredFunc f{"axpy", {A, B, C}, loop(i, 100, store(C, load(A, i) * 2 + load(B, i), i))};
  auto a = array<float>({100}, kFloat32, iota_f32(100)), b = array<float>({100}, kFloat32, iota_f32(100, 5, -0.5f));
  auto c = NDArray::empty({100}, kFloat32);
  compile(f)({a, b, c});
  auto out = values<float>(c);
  for (int k = 0; k < 100; ++k) EXPECT_FLOAT_EQ(out[k], 2.0f * k + (5 - 0.5f * k)) << k;
}

TEST(CodeGen, NestedLoopsWithSymbolicBounds) {
  // C[i, j] = A[i, j] + B[j] over rows [1, 1 + rows) where rows is a let-bound variable.
  const int64_t R = 7, M = 13;
  Buffer A = make_buffer("A", kFloat32, {R, M}), B = make_buffer("B", kFloat32, {M}),
         C = make_buffer("C", kFloat32, {R, M});
  Var i("i"), j("j"), rows("rows");
  Stmt inner = loop(j, M, store(C, load(A, i * M + j) + load(B, j), i * M + j));
  Stmt body = LetStmt::make(rows, Expr(R - 1), For::make(i, 1, rows, ForKind::Serial, inner));
  auto a = array<float>({R, M}, kFloat32, iota_f32(R * M)), b = array<float>({M}, kFloat32, iota_f32(M, 100));
  auto c = NDArray::empty({R, M}, kFloat32);
  compile({"add2d", {A, B, C}, body})({a, b, c});
  auto out = values<float>(c);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t m = 0; m < M; ++m)
      EXPECT_EQ(out[r * M + m], r == 0 ? 0.0f : float(r * M + m) + 100 + m) << r << "," << m;
}

TEST(CodeGen, ParallelLoop) {
  const int64_t n = 1000;
  Buffer A = make_buffer("A", kFloat32, {n}), C = make_buffer("C", kFloat32, {n});
  Var i("i");
  LoweredFunc f{"par", {A, C}, loop(i, n, store(C, load(A, i) + 1, i), ForKind::Parallel)};
  auto a = array<float>({n}, kFloat32, iota_f32(n)), c = NDArray::empty({n}, kFloat32);
  compile(f)({a, c});
  auto out = values<float>(c);
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(out[k], k + 1.0f) << k;
}

TEST(CodeGen, ParallelLoopOverInt32Variable) {
  // A narrow loop variable, bounds from a let, and a likely() guard lowering would normally drop.
  const int64_t n = 100;
  Buffer C = make_buffer("C", runtime::kInt32, {n});
  Var i("i", runtime::kInt32), m("m", runtime::kInt32);
  Stmt guarded = IfThenElse::make(call(Intrinsic::likely, {Expr(i) < m}), store(C, Expr(i) * 3, cast(kInt64, i)));
  Stmt body = LetStmt::make(m, IntImm::make(runtime::kInt32, n),
                            For::make(i, IntImm::make(runtime::kInt32, 0), m, ForKind::Parallel, guarded));
  auto c = NDArray::empty({n}, runtime::kInt32);
  compile({"par32", {C}, body})({c});
  auto out = values<int32_t>(c);
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(out[k], 3 * k) << k;
}

TEST(CodeGen, ParallelLoopInsideSerialCapturesOuterVariables) {
  // for o in [0, 4): let scale = o * 10 in parallel for i in [0, 250): C[o*250 + i] = A[..] * scale + i
  const int64_t outer = 4, inner = 250;
  Buffer A = make_buffer("A", kFloat32, {outer * inner}), C = make_buffer("C", kFloat32, {outer * inner});
  Var o("o"), i("i"), scale("scale", kFloat32);
  Expr idx = o * inner + i;
  Stmt par = loop(i, inner, store(C, load(A, idx) * scale + cast(kFloat32, i), idx), ForKind::Parallel);
  Stmt body = loop(o, outer, LetStmt::make(scale, cast(kFloat32, o * 10), par));
  auto a = array<float>({outer * inner}, kFloat32, iota_f32(outer * inner)),
       c = NDArray::empty({outer * inner}, kFloat32);
  compile({"nested_par", {A, C}, body})({a, c});
  auto out = values<float>(c);
  for (int64_t oo = 0; oo < outer; ++oo)
    for (int64_t ii = 0; ii < inner; ++ii)
      ASSERT_EQ(out[oo * inner + ii], float(oo * inner + ii) * float(oo * 10) + float(ii)) << oo << "," << ii;
}

TEST(CodeGen, ParallelLoopWithLocalBufferAndEmptyExtent) {
  // Each task has its own scratch buffer; a second parallel loop has no iterations at all.
  const int64_t n = 64, k = 8;
  Buffer A = make_buffer("A", kFloat32, {n, k}), C = make_buffer("C", kFloat32, {n});
  Buffer acc = make_buffer("acc", kFloat32, {1}, MemoryScope::Local);
  Var i("i"), j("j"), e("e");
  Stmt reduce = Block::make(
      {store(acc, f32(0), 0), loop(j, k, store(acc, load(acc, 0) + load(A, i * k + j), 0)), store(C, load(acc, 0), i)});
  Stmt body = Block::make({loop(i, n, Allocate::make(acc, reduce), ForKind::Parallel),
                           LetStmt::make(e, Expr(0), For::make(i, 0, e, ForKind::Parallel, store(C, f32(-1), i)))});
  std::vector<float> av(n * k);
  std::iota(av.begin(), av.end(), 0.0f);
  auto a = array<float>({n, k}, kFloat32, av), c = NDArray::empty({n}, kFloat32);
  compile({"rowsum", {A, C}, body})({a, c});
  auto out = values<float>(c);
  for (int64_t r = 0; r < n; ++r) EXPECT_EQ(out[r], float(k * (r * k) + k * (k - 1) / 2)) << r;
}

TEST(CodeGen, VectorLoadsAndStores) {
  // Aligned: C[ramp(16 io)] = A[ramp(16 io)] + 2; unaligned: D[ramp(16 io + 3)] = A[ramp(16 io + 1)] * x.
  Buffer A = make_buffer("A", kFloat32, {80}), C = make_buffer("C", kFloat32, {64}),
         D = make_buffer("D", kFloat32, {80});
  Var io("io");
  Expr x = Broadcast::make(f32(3), 16);
  Stmt body = loop(io, 4,
                   Block::make({store(C, load(A, ramp(io * 16, 16)) + Broadcast::make(f32(2), 16), ramp(io * 16, 16)),
                                store(D, load(A, ramp(io * 16 + 1, 16)) * x, ramp(io * 16 + 3, 16))}));
  LoweredFunc f{"vec", {A, C, D}, body};
  auto module = build_llvm({f}, Target::parse("llvm"));
  auto a = array<float>({80}, kFloat32, iota_f32(80)), c = NDArray::empty({64}, kFloat32),
       d = NDArray::empty({80}, kFloat32);
  module->get_kernel("vec")({a, c, d});
  auto cv = values<float>(c), dv = values<float>(d);
  for (int k = 0; k < 64; ++k) EXPECT_EQ(cv[k], k + 2.0f) << k;
  for (int k = 0; k < 64; ++k) EXPECT_EQ(dv[k + 3], (k + 1) * 3.0f) << k;
  EXPECT_EQ(dv[0], 0.0f);
  const std::string ir = module->source("ll");
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos);
  EXPECT_NE(ir.find("align 64"), std::string::npos) << ir;
  EXPECT_NE(ir.find("<16 x float>* %"), std::string::npos);
}

TEST(CodeGen, ClampedRowsOfATileAreAddressedByRowPointers) {
  // A matrix product's tiles of 6 rows x 2 vectors over a row count m known at run time: the
  // last tile's rows past m read row m - 1 (A[min(t*6 + i, m - 1)*K + k]) and are not stored.
  const int64_t K = 64, kMaxRows = 12, m = 10;
  Buffer A = make_buffer("A", kFloat32, {kMaxRows, K}), B = make_buffer("B", kFloat32, {K, 16}),
         C = make_buffer("C", kFloat32, {kMaxRows, 16}), M = make_buffer("M", kInt64, {1});
  Buffer acc = make_buffer("acc", kFloat32, {96}, MemoryScope::Local);
  Var t("t"), k("k"), i("i"), jo("jo"), rows("rows");
  auto each = [&](const Var& v, int64_t n, Stmt body) { return For::make(v, 0, n, ForKind::Unrolled, body); };
  Expr lanes = ramp(i * 16 + jo * 8, 8);
  Expr a = Broadcast::make(load(A, min(t * 6 + i, rows - 1) * K + k), 8);
  Stmt product =
      loop(k, K, each(i, 6, each(jo, 2, store(acc, load(acc, lanes) + a * load(B, ramp(k * 16 + jo * 8, 8)), lanes))));
  Stmt tile = Allocate::make(
      acc, Block::make({each(i, 6, each(jo, 2, store(acc, Broadcast::make(f32(0), 8), lanes))), product,
                        each(i, 6,
                             each(jo, 2,
                                  IfThenElse::make(t * 6 + i < rows,
                                                   store(C, load(acc, lanes), ramp((t * 6 + i) * 16 + jo * 8, 8)))))}));
  LoweredFunc f{"tiles", {A, B, C, M}, LetStmt::make(rows, load(M, 0), loop(t, 2, tile))};
  auto module = build_llvm({f}, Target::parse("llvm -mcpu=haswell"));
  auto a_arr = array<float>({kMaxRows, K}, kFloat32, iota_f32(kMaxRows * K, 0, 0.01f)),
       b_arr = array<float>({K, 16}, kFloat32, iota_f32(K * 16, 1, -0.002f)),
       c_arr = array<float>({kMaxRows, 16}, kFloat32, std::vector<float>(kMaxRows * 16, -1.0f)),
       m_arr = array<int64_t>({1}, kInt64, {m});
  module->get_kernel("tiles")({a_arr, b_arr, c_arr, m_arr});
  auto av = values<float>(a_arr), bv = values<float>(b_arr), cv = values<float>(c_arr);
  for (int64_t r = 0; r < kMaxRows; ++r)
    for (int64_t j = 0; j < 16; ++j) {
      double expect = -1;
      if (r < m) {
        expect = 0;
        for (int64_t x = 0; x < K; ++x) expect += double(av[r * K + x]) * bv[x * 16 + j];
      }
      EXPECT_NEAR(cv[r * 16 + j], expect, 1e-3 * std::abs(expect)) << r << "," << j;
    }
  // As one sum with the column, the six rows' offsets became vectors of integers (LLVM's SLP
  // vectorizer), extracted lane by lane in the inner loop, which spilled the accumulators.
  const std::string ir = module->source("ll");
  const size_t body = ir.find("\nfor.k.body"), end = ir.find("\n\n", body);
  ASSERT_NE(body, std::string::npos) << ir;
  EXPECT_EQ(ir.substr(body, end - body).find(" x i64>"), std::string::npos) << ir;
}

TEST(CodeGen, AlignmentFollowsTheRampBase) {
  // A base of 8 floats past a 64-byte boundary is 32-byte aligned, one of 1 float only 4.
  Buffer A = make_buffer("A", kFloat32, {64}), C = make_buffer("C", kFloat32, {64});
  Var io("io");
  for (auto [offset, align] : {std::pair<int, int>{0, 64}, {8, 32}, {1, 4}}) {
    Stmt body = loop(io, 2, store(C, load(A, ramp(io * 32 + offset, 16)), ramp(io * 32, 16)));
    std::string ir = build_llvm({{"k", {A, C}, body}}, Target::parse("llvm"))->source("ll");
    size_t at = ir.find("load <16 x float>");
    ASSERT_NE(at, std::string::npos) << ir;
    std::string line = ir.substr(at, ir.find('\n', at) - at);
    EXPECT_NE(line.find("align " + std::to_string(align)), std::string::npos) << offset << ": " << line;
  }
}

TEST(CodeGen, GatherScatterAndBroadcastIndex) {
  // C[ramp(16 io)] = A[idx[ramp(16 io)]] + A[ramp(2 * 16 io, stride 2)] + A[broadcast(5)];
  // D[idx[ramp(16 io)]] = C-like values (a scatter through a permutation).
  const int64_t n = 32;
  Buffer A = make_buffer("A", kFloat32, {2 * n}), idx = make_buffer("idx", kInt64, {n});
  Buffer C = make_buffer("C", kFloat32, {n}), D = make_buffer("D", kFloat32, {n});
  Var io("io");
  Expr lanes = ramp(io * 16, 16);
  Expr gathered = load(A, load(idx, lanes)) + load(A, ramp(io * 32, 16, 2)) + load(A, Broadcast::make(Expr(5), 16));
  Stmt body = loop(io, n / 16, Block::make({store(C, gathered, lanes), store(D, load(A, lanes), load(idx, lanes))}));
  std::vector<int64_t> perm(n);
  for (int64_t k = 0; k < n; ++k) perm[k] = (k * 7 + 3) % n;
  auto a = array<float>({2 * n}, kFloat32, iota_f32(2 * n, 0, 10)), ix = array<int64_t>({n}, kInt64, perm);
  auto c = NDArray::empty({n}, kFloat32), d = NDArray::empty({n}, kFloat32);
  auto module = build_llvm({{"gather", {A, idx, C, D}, body}}, Target::parse("llvm"));
  module->get_kernel("gather")({a, ix, c, d});
  auto cv = values<float>(c), dv = values<float>(d);
  for (int64_t k = 0; k < n; ++k) {
    EXPECT_EQ(cv[k], 10.0f * perm[k] + 10.0f * (2 * k) + 50.0f) << k;
    EXPECT_EQ(dv[perm[k]], 10.0f * k) << k;
  }
  EXPECT_NE(module->source("ll").find("masked.gather"), std::string::npos);
}

void check_reversal_through_local_buffer(int64_t n, bool expect_heap) {
  Buffer A = make_buffer("A", kFloat32, {n}), C = make_buffer("C", kFloat32, {n});
  Buffer tmp = make_buffer("tmp", kFloat32, {n}, MemoryScope::Local);
  Var i("i"), j("j");
  Stmt body = Allocate::make(tmp, Block::make({loop(i, n, store(tmp, load(A, i) * 2, i)),
                                               loop(j, n, store(C, load(tmp, Expr(n - 1) - j), j))}));
  auto module = build_llvm({{"reverse", {A, C}, body}}, Target::parse("llvm"));
  auto a = array<float>({n}, kFloat32, iota_f32(n)), c = NDArray::empty({n}, kFloat32);
  module->get_kernel("reverse")({a, c});
  auto out = values<float>(c);
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(out[k], 2.0f * (n - 1 - k)) << k;
  EXPECT_EQ(module->source("ll").find("@aligned_alloc") != std::string::npos, expect_heap);
}

TEST(CodeGen, SmallLocalBufferLivesOnTheStack) { check_reversal_through_local_buffer(1000, false); }
TEST(CodeGen, LargeLocalBufferLivesOnTheHeap) { check_reversal_through_local_buffer(100000, true); }

TEST(CodeGen, FailedAllocationIsReportedFromSerialAndParallelCode) {
  // 2^60 floats cannot be allocated; the kernel returns kStatusOutOfMemory through the launcher.
  // The scratch buffer is addressed through loaded indices so LLVM cannot delete it.
  Buffer idx = make_buffer("idx", kInt64, {4}), C = make_buffer("C", kFloat32, {4});
  Buffer huge = make_buffer("huge", kFloat32, {int64_t{1} << 60}, MemoryScope::Local);
  Var i("i");
  Stmt use = Block::make({store(huge, f32(1), load(idx, i)), store(C, load(huge, load(idx, 3 - i)), i)});
  for (ForKind kind : {ForKind::Serial, ForKind::Parallel}) {
    Stmt body = loop(i, 4, Allocate::make(huge, use), kind);
    auto kernel = compile({"oom", {idx, C}, body});
    auto ix = array<int64_t>({4}, kInt64, {0, 1, 2, 3});
    auto c = NDArray::empty({4}, kFloat32);
    try {
      kernel({ix, c});
      FAIL() << "expected an allocation failure";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("status " + std::to_string(kStatusOutOfMemory)), std::string::npos)
          << e.what();
    }
  }
}

TEST(CodeGen, ABufferOfSymbolicSizeInEveryIterationOfALoopNeitherGrowsTheStackNorLeaks) {
  // 20000 iterations of a buffer of `n` floats, n read from an argument: 64 KiB each (on the stack)
  // would take 1.25 GiB of a stack that kept them, 4 MiB each (on the heap) 80 GiB of a heap that
  // did; 2^60 floats cannot be allocated at all. The buffer is written and read at positions
  // loaded from the arguments (both n - 1), so LLVM cannot delete it.
  Buffer args = make_buffer("args", kInt64, {3}), C = make_buffer("C", kFloat32, {1});
  Var n("n"), i("i");
  Buffer scratch = BufferNode::make("scratch", kFloat32, {n}, MemoryScope::Local);
  Stmt use = Block::make({store(scratch, cast(kFloat32, i), load(args, 1)), store(C, load(scratch, load(args, 2)), 0)});
  for (ForKind kind : {ForKind::Serial, ForKind::Parallel}) {
    Stmt body = LetStmt::make(n, load(args, 0), loop(i, 20000, Allocate::make(scratch, use), kind));
    auto kernel = compile({"scratch", {args, C}, body});
    for (int64_t floats : {int64_t{16} << 10, int64_t{1} << 20}) {
      auto c = NDArray::empty({1}, kFloat32);
      kernel({array<int64_t>({3}, kInt64, {floats, floats - 1, floats - 1}), c});
      // In parallel, the threads' last iterations race to C: any iteration's value will do.
      const float last = static_cast<const float*>(c.data())[0];
      if (kind == ForKind::Serial) EXPECT_EQ(last, 19999.0f) << floats;
      else EXPECT_TRUE(last >= 0 && last < 20000 && last == static_cast<int>(last)) << last;
    }
    auto c = NDArray::empty({1}, kFloat32);
    const int64_t huge = int64_t{1} << 60;
    try {
      kernel({array<int64_t>({3}, kInt64, {huge, huge - 1, huge - 1}), c});
      FAIL() << "expected an allocation failure";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("status " + std::to_string(kStatusOutOfMemory)), std::string::npos)
          << e.what();
    }
  }
}

TEST(CodeGen, Float16IsComputedInFloat32) {
  const int64_t n = 32;
  Buffer A = make_buffer("A", runtime::kFloat16, {n}), C = make_buffer("C", runtime::kFloat16, {n});
  Buffer S = make_buffer("S", kFloat32, {n});
  Var i("i"), io("io");
  Expr h3 = FloatImm::make(runtime::kFloat16, 3.0);
  Stmt body = Block::make(
      {loop(i, 16, store(C, load(A, i) * h3 + FloatImm::make(runtime::kFloat16, 0.5), i)),
       loop(io, 1, store(C, load(A, ramp(io * 16 + 16, 16)) * Broadcast::make(h3, 16), ramp(io * 16 + 16, 16))),
       loop(i, n, store(S, cast(kFloat32, load(A, i)), i))});
  std::vector<uint16_t> av(n);  // half bits
  for (int64_t k = 0; k < n; ++k) av[k] = runtime::float_to_half(0.25f * k - 3.0f);
  // Plain x86-64 has no F16C: conversions then go through runtime helpers the JIT provides.
  for (const char* target : {"llvm", "llvm -mcpu=x86-64"}) {
    auto a = array<uint16_t>({n}, runtime::kFloat16, av), c = NDArray::empty({n}, runtime::kFloat16);
    auto s = NDArray::empty({n}, kFloat32);
    compile({"half", {A, C, S}, body}, target)({a, c, s});
    auto cv = values<uint16_t>(c);
    auto sv = values<float>(s);
    for (int64_t k = 0; k < n; ++k) {
      float x = 0.25f * k - 3.0f;
      float expect = k < 16 ? x * 3 + 0.5f : x * 3;
      EXPECT_EQ(runtime::half_to_float(cv[k]), runtime::half_to_float(runtime::float_to_half(expect)))
          << target << " " << k;
      EXPECT_EQ(sv[k], x) << target << " " << k;
    }
  }
}

TEST(CodeGen, BoolBuffers) {
  // P[i] = A[i] > 0.5 && !Q[i], scalar for the first 16 elements and vector for the next 16.
  const int64_t n = 32;
  Buffer A = make_buffer("A", kFloat32, {n}), Q = make_buffer("Q", runtime::kBool, {n}),
         P = make_buffer("P", runtime::kBool, {n});
  Var i("i"), io("io");
  Expr lanes = ramp(io * 16 + 16, 16);
  Stmt body = Block::make(
      {loop(i, 16, store(P, logical_and(load(A, i) > f32(0.5), logical_not(load(Q, i))), i)),
       loop(
           io, 1,
           store(P, logical_and(load(A, lanes) > Broadcast::make(f32(0.5), 16), logical_not(load(Q, lanes))), lanes))});
  std::vector<float> av(n);
  std::vector<uint8_t> qv(n);
  for (int64_t k = 0; k < n; ++k) {
    av[k] = (k % 3) * 0.4f;
    qv[k] = k % 2;
  }
  auto a = array<float>({n}, kFloat32, av), q = array<uint8_t>({n}, runtime::kBool, qv),
       p = NDArray::empty({n}, runtime::kBool);
  compile({"bools", {A, Q, P}, body})({a, q, p});
  auto pv = values<uint8_t>(p);
  for (int64_t k = 0; k < n; ++k) EXPECT_EQ(pv[k], (av[k] > 0.5f && !qv[k]) ? 1 : 0) << k;
}

TEST(CodeGen, NarrowIntegersWrapAndCompareBySignedness) {
  const int64_t n = 6;
  using runtime::DataType;
  const DataType i8 = DataType::Int(8), u8 = DataType::UInt(8), i32 = DataType::Int(32);
  Buffer A = make_buffer("A", i8, {n}), B = make_buffer("B", u8, {n}), F = make_buffer("F", kFloat32, {n});
  Buffer sum = make_buffer("sum", i8, {n}), udiv = make_buffer("udiv", u8, {n}),
         ugt = make_buffer("ugt", runtime::kBool, {n});
  Buffer widened = make_buffer("widened", i32, {n}), to_u8 = make_buffer("to_u8", u8, {n}),
         to_i8 = make_buffer("to_i8", i8, {n});
  Buffer shifts = make_buffer("shifts", i32, {n, 2}), to_bool = make_buffer("to_bool", runtime::kBool, {n});
  Var i("i");
  Expr a = load(A, i), b = load(B, i), x = load(F, i);
  Stmt body = loop(i, n,
                   Block::make({
                       store(sum, a + a, i),
                       store(udiv, b / IntImm::make(u8, 7), i),
                       store(ugt, b > IntImm::make(u8, 100), i),
                       store(widened, cast(i32, a) * cast(i32, b), i),
                       store(to_u8, cast(u8, x), i),
                       store(to_i8, cast(i8, x), i),
                       store(shifts, call(Intrinsic::shift_right, {cast(i32, a), IntImm::make(i32, 1)}), i * 2),
                       store(shifts, cast(i32, call(Intrinsic::shift_right, {b, IntImm::make(u8, 1)})), i * 2 + 1),
                       store(to_bool, cast(runtime::kBool, x), i),
                   }));
  std::vector<int8_t> av = {100, -100, 127, -128, 5, -1};
  std::vector<uint8_t> bv = {200, 100, 255, 0, 7, 101};
  std::vector<float> fv = {-1.0f, 300.0f, 2.9f, -2.9f, 0.0f, NAN};
  auto arrays = std::vector<NDArray>{array<int8_t>({n}, i8, av),
                                     array<uint8_t>({n}, u8, bv),
                                     array<float>({n}, kFloat32, fv),
                                     NDArray::empty({n}, i8),
                                     NDArray::empty({n}, u8),
                                     NDArray::empty({n}, runtime::kBool),
                                     NDArray::empty({n}, i32),
                                     NDArray::empty({n}, u8),
                                     NDArray::empty({n}, i8),
                                     NDArray::empty({n, 2}, i32),
                                     NDArray::empty({n}, runtime::kBool)};
  compile({"ints", {A, B, F, sum, udiv, ugt, widened, to_u8, to_i8, shifts, to_bool}, body})(arrays);
  auto s = values<int8_t>(arrays[3]);
  auto d = values<uint8_t>(arrays[4]);
  auto g = values<uint8_t>(arrays[5]);
  auto w = values<int32_t>(arrays[6]);
  auto sh = values<int32_t>(arrays[9]);
  auto tb = values<uint8_t>(arrays[10]);
  for (int64_t k = 0; k < n; ++k) {
    EXPECT_EQ(s[k], static_cast<int8_t>(av[k] + av[k])) << k;
    EXPECT_EQ(d[k], bv[k] / 7) << k;
    EXPECT_EQ(g[k], bv[k] > 100 ? 1 : 0) << k;
    EXPECT_EQ(w[k], int32_t(av[k]) * int32_t(bv[k])) << k;
    EXPECT_EQ(sh[2 * k], int32_t(av[k]) >> 1) << k;
    EXPECT_EQ(sh[2 * k + 1], bv[k] >> 1) << k;
    EXPECT_EQ(tb[k], fv[k] != 0 ? 1 : 0) << k;  // NaN is true, as in C
  }
  EXPECT_EQ(values<uint8_t>(arrays[7])[0], 255);  // -1.0 wraps like numpy on x86
  EXPECT_EQ(values<uint8_t>(arrays[7])[1], 44);   // 300 mod 256
  EXPECT_EQ(values<int8_t>(arrays[8])[2], 2);     // truncation toward zero
  EXPECT_EQ(values<int8_t>(arrays[8])[3], -2);
}

int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t py_floormod(int64_t a, int64_t b) { return a - py_floordiv(a, b) * b; }

TEST(CodeGen, IntegerDivisionOnNegativeOperands) {
  // For every divisor (variable, and the constants 3, -3, 4 which take the shift path, -4):
  // out[d, i, 0..3] = a / b, a % b, floordiv(a, b), floormod(a, b); vectorized for i in [16, 32).
  std::vector<int64_t> divisors = {3, -3, 4, -4, 1, 7};
  const int64_t n = 32, d_count = static_cast<int64_t>(divisors.size());
  Buffer A = make_buffer("A", kInt64, {n}), Bv = make_buffer("B", kInt64, {d_count});
  Buffer out_var = make_buffer("out_var", kInt64, {d_count, n, 4}),
         out_const = make_buffer("out_const", kInt64, {d_count, n, 4});
  std::vector<Stmt> stmts;
  Var d("d"), i("i"), io("io");
  auto emit4 = [&](const Buffer& out, Expr dd, Expr a, Expr b, Expr base, int64_t lanes) {
    auto at = [&](int k) { return lanes == 1 ? base * 4 + k : ramp(base * 4 + k, lanes, 4); };
    return Block::make({store(out, a / b, at(0)), store(out, a % b, at(1)), store(out, floordiv(a, b), at(2)),
                        store(out, floormod(a, b), at(3))});
  };
  Expr b_var = load(Bv, d);
  stmts.push_back(loop(d, d_count,
                       Block::make({
                           loop(i, 16, emit4(out_var, d, load(A, i), b_var, d * n + i, 1)),
                           loop(io, 1,
                                emit4(out_var, d, load(A, ramp(io * 16 + 16, 16)), Broadcast::make(b_var, 16),
                                      d * n + io * 16 + 16, 16)),
                       })));
  for (int64_t k = 0; k < d_count; ++k) {
    Expr b = Expr(divisors[k]);
    stmts.push_back(loop(i, 16, emit4(out_const, Expr(k), load(A, i), b, Expr(k * n) + i, 1)));
    stmts.push_back(loop(io, 1,
                         emit4(out_const, Expr(k), load(A, ramp(io * 16 + 16, 16)), Broadcast::make(b, 16),
                               Expr(k * n) + io * 16 + 16, 16)));
  }
  std::vector<int64_t> av(n);
  for (int64_t k = 0; k < n; ++k) av[k] = k - 16;
  auto a = array<int64_t>({n}, kInt64, av), b = array<int64_t>({d_count}, kInt64, divisors);
  auto ov = NDArray::empty({d_count, n, 4}, kInt64), oc = NDArray::empty({d_count, n, 4}, kInt64);
  compile({"divs", {A, Bv, out_var, out_const}, Block::make(stmts)})({a, b, ov, oc});
  for (const NDArray& out : {ov, oc}) {
    auto v = values<int64_t>(out);
    for (int64_t k = 0; k < d_count; ++k)
      for (int64_t x = 0; x < n; ++x) {
        int64_t aa = av[x], bb = divisors[k];
        const int64_t* r = &v[(k * n + x) * 4];
        EXPECT_EQ(r[0], aa / bb) << aa << " / " << bb;
        EXPECT_EQ(r[1], aa % bb) << aa << " % " << bb;
        EXPECT_EQ(r[2], py_floordiv(aa, bb)) << aa << " // " << bb;
        EXPECT_EQ(r[3], py_floormod(aa, bb)) << aa << " mod " << bb;
      }
  }
}

TEST(CodeGen, FloatDivisionAndModulo) {
  Buffer A = make_buffer("A", kFloat32, {4}), B = make_buffer("B", kFloat32, {4}),
         C = make_buffer("C", kFloat32, {4, 2});
  Var i("i");
  Stmt body =
      loop(i, 4, Block::make({store(C, load(A, i) / load(B, i), i * 2), store(C, load(A, i) % load(B, i), i * 2 + 1)}));
  std::vector<float> av = {7.5f, -7.5f, 7.5f, -7.5f}, bv = {2, 2, -2, -2};
  auto c = NDArray::empty({4, 2}, kFloat32);
  compile({"fdiv", {A, B, C}, body})({array<float>({4}, kFloat32, av), array<float>({4}, kFloat32, bv), c});
  auto out = values<float>(c);
  for (int k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(out[2 * k], av[k] / bv[k]);
    EXPECT_EQ(out[2 * k + 1], std::fmod(av[k], bv[k]));
  }
}

TEST(CodeGen, ControlFlowLetsSelectsAndMinMax) {
  // C[i] = i < 5 ? max(A[i], 2) : (let t = A[i] * 2 in min(t, 9)); D[i] = select(A[i] > 3, A[i], -A[i]) (vector).
  Buffer A = make_buffer("A", kFloat32, {16}), C = make_buffer("C", kFloat32, {16}),
         D = make_buffer("D", kFloat32, {16});
  Var i("i"), t("t", kFloat32), io("io");
  Expr a = load(A, i);
  Stmt branch =
      IfThenElse::make(i < 5, store(C, max(a, f32(2)), i), store(C, Let::make(t, a * 2, min(Expr(t), f32(9))), i));
  Expr av16 = load(A, ramp(io * 16, 16));
  Stmt vec = loop(io, 1, store(D, select(av16 > Broadcast::make(f32(3), 16), av16, -av16), ramp(io * 16, 16)));
  auto a_arr = array<float>({16}, kFloat32, iota_f32(16)), c = NDArray::empty({16}, kFloat32),
       d = NDArray::empty({16}, kFloat32);
  compile({"control", {A, C, D}, Block::make({loop(i, 16, branch), vec})})({a_arr, c, d});
  auto cv = values<float>(c), dv = values<float>(d);
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(cv[k], k < 5 ? std::max(float(k), 2.0f) : std::min(2.0f * k, 9.0f)) << k;
    EXPECT_EQ(dv[k], k > 3 ? float(k) : -float(k)) << k;
  }
}

TEST(CodeGen, UnrolledLoops) {
  Buffer A = make_buffer("A", kFloat32, {8}), C = make_buffer("C", kFloat32, {8});
  Var i("i"), j("j"), n("n");
  // Explicitly unrolled, from a symbolic min; and handed to LLVM with unroll_explicit = 0.
  Stmt explicit_loop = LetStmt::make(n, Expr(2), For::make(i, n, 4, ForKind::Unrolled, store(C, load(A, i) + 1, i)));
  Stmt llvm_loop = For::make(j, 0, 2, ForKind::Unrolled, store(C, load(A, j) * 3, j), {{"unroll_explicit", 0}});
  auto a = array<float>({8}, kFloat32, iota_f32(8)), c = NDArray::empty({8}, kFloat32);
  compile({"unrolled", {A, C}, Block::make({explicit_loop, llvm_loop})})({a, c});
  auto out = values<float>(c);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(out[k], k < 2 ? 3.0f * k : (k < 6 ? k + 1.0f : 0.0f)) << k;

  Stmt symbolic = LetStmt::make(n, Expr(4), For::make(i, 0, n, ForKind::Unrolled, store(C, load(A, i), i)));
  try {
    compile({"bad_unroll", {A, C}, symbolic});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loop i is unrolled but its extent n is not a constant"), std::string::npos)
        << e.what();
  }
}

TEST(CodeGen, LoopIdiomsBecomeLibcallsTheJitResolves) {
  // LLVM turns these loops into memset and memcpy, which the JIT must resolve itself.
  const int64_t n = 4096;
  Buffer A = make_buffer("A", kFloat32, {n}), C = make_buffer("C", kFloat32, {n}), D = make_buffer("D", kFloat32, {n});
  Var i("i"), j("j");
  auto module = build_llvm(
      {{"idioms", {A, C, D}, Block::make({loop(i, n, store(C, f32(0), i)), loop(j, n, store(D, load(A, j), j))})}},
      Target::parse("llvm"));
  auto a = array<float>({n}, kFloat32, iota_f32(n)), c = array<float>({n}, kFloat32, iota_f32(n)),
       d = NDArray::empty({n}, kFloat32);
  module->get_kernel("idioms")({a, c, d});
  EXPECT_EQ(values<float>(c), std::vector<float>(n, 0.0f));
  EXPECT_EQ(values<float>(d), iota_f32(n));
  const std::string ir = module->source("ll");
  EXPECT_NE(ir.find("llvm.memset"), std::string::npos);
  EXPECT_NE(ir.find("llvm.memcpy"), std::string::npos);
}

TEST(CodeGen, VectorizedLoopReachingCodegenRunsSerially) {
  Buffer A = make_buffer("A", kFloat32, {8}), C = make_buffer("C", kFloat32, {8});
  Var i("i");
  auto a = array<float>({8}, kFloat32, iota_f32(8)), c = NDArray::empty({8}, kFloat32);
  compile({"vloop", {A, C}, loop(i, 8, store(C, load(A, i) - 1, i), ForKind::Vectorized)})({a, c});
  auto out = values<float>(c);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(out[k], k - 1.0f);
}

void expect_codegen_error(const LoweredFunc& f, const std::string& part) {
  try {
    build_llvm({f}, Target::parse("llvm"));
    FAIL() << "expected an error containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(CodeGen, NodesThatLoweringRemovesAreInternalErrors) {
  Buffer C = make_buffer("C", kFloat32, {4});
  Tensor T = placeholder({4}, kFloat32, "T");
  Var i("i");
  expect_codegen_error({"pl", {C}, loop(i, 4, store(C, T(i), i))},
                       "internal error: ProducerLoad reached the LLVM code generator in kernel 'pl'");
  IterVar k = reduce_axis(Range(0, 4), "k");
  expect_codegen_error({"red", {C}, store(C, sum(T(k), {k}), 0)}, "internal error: Reduce");
  expect_codegen_error({"ps", {C}, ProducerStore::make(T, f32(1), {Expr(0)})}, "internal error: ProducerStore");
  expect_codegen_error({"rz", {C}, Realize::make(T, {Range(0, 4)}, store(C, f32(1), 0))}, "internal error: Realize");
}

TEST(CodeGen, UndefinedVariablesAndBuffersAreErrors) {
  Buffer C = make_buffer("C", kFloat32, {4}), other = make_buffer("other", kFloat32, {4});
  Var i("i"), n("n");
  expect_codegen_error({"free_var", {C}, loop(i, n, store(C, f32(1), i))}, "uses variable 'n', which nothing defines");
  expect_codegen_error({"free_buf", {C}, loop(i, 4, store(C, load(other, i), i))}, "accesses buffer 'other'");
  expect_codegen_error({"twice", {C, C}, Evaluate::make(0)}, "takes buffer 'C' twice");
}

}  // namespace
}  // namespace tessera::targets::testing
