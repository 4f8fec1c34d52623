// Invalid schedules raise errors that name the stage and the loop; nothing crashes.
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "error_of.h"

namespace tessera::schedule::testing {
namespace {

using namespace tessera::testing;

TEST(ScheduleErrors, NameTheStageAndLoop) {
  Matmul mm = matmul(8, 8, 8);
  Matmul other = matmul(8, 8, 8);
  Schedule s({mm.C});
  Stage& c = s[mm.C];
  std::string msg = error_of([&] { c.split(c.loop("x"), 2); });
  EXPECT_TRUE(contains(msg, "stage C has no loop 'x'")) << msg;
  msg = error_of([&] { c.loop(other.C.as<ComputeOp>()->axis[0]); });
  EXPECT_TRUE(contains(msg, "stage C has no axis 'i'")) << msg;
  msg = error_of([&] { c.parallel(c.loop("k")); });
  EXPECT_TRUE(contains(msg, "parallel on stage C: k is a reduction loop")) << msg;
  msg = error_of([&] { c.split(c.loop("i"), 0); });
  EXPECT_TRUE(contains(msg, "factor must be positive")) << msg;
  msg = error_of([&] { c.fuse(c.loop("i"), c.loop("k")); });
  EXPECT_TRUE(contains(msg, "must come right after")) << msg;
  Loop io = c.split(c.loop("i"), 2).first;  // a plain variable: C++17 lambdas cannot capture a structured binding
  msg = error_of([&] { c.split(c.root_loops()[0], 2); });
  EXPECT_TRUE(contains(msg, "loop i is not a current loop")) << msg;
  msg = error_of([&] { c.reorder({io, io}); });
  EXPECT_TRUE(contains(msg, "listed twice")) << msg;
  msg = error_of([&] { s.cache_write(mm.C, "local"); });
  EXPECT_TRUE(contains(msg, "cache_write of C must come before")) << msg;
  msg = error_of([&] { c.compute_inline(); });
  EXPECT_TRUE(contains(msg, "C is an output")) << msg;
  msg = error_of([&] { s[mm.A].compute_root(); });
  EXPECT_TRUE(contains(msg, "A is an input")) << msg;
  msg = error_of([&] { c.set_storage_align(2, 16, 1); });
  EXPECT_TRUE(contains(msg, "dimension 2 out of range")) << msg;
  msg = error_of([&] { s[other.C]; });
  EXPECT_TRUE(contains(msg, "not part of this schedule")) << msg;
}

TEST(ScheduleErrors, ComputeAtNeedsAConsumer) {
  Tensor A = placeholder({Expr(10)}, runtime::kFloat32, "A");
  Tensor B = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return A(i[0]) + 1; }, "B");
  Tensor D = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return A(i[0]) * 2; }, "D");
  Tensor C = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return B(i[0]) + D(i[0]); }, "C");
  Schedule s({C});
  std::string msg = error_of([&] { s[B].compute_at(s[D], s[D].loop("i")); });
  EXPECT_TRUE(contains(msg, "stage D does not consume B")) << msg;
  // A reduction cannot be inlined.
  IterVar k = reduce_axis(Range(Expr(0), Expr(10)), "k");
  Tensor R = compute(
      {Expr(1)}, [&](const std::vector<Var>&) { return sum(A(k), {k}); }, "R");
  Tensor Out = compute(
      {Expr(1)}, [&](const std::vector<Var>& i) { return R(i[0]); }, "Out");
  Schedule t({Out});
  msg = error_of([&] { t[R].compute_inline(); });
  EXPECT_TRUE(contains(msg, "R is a reduction and cannot be inlined")) << msg;
}

TEST(ScheduleErrors, ConsumerOutsideTheAttachLoop) {
  // B is computed inside C's loop, but D (another output) reads it too.
  Tensor A = placeholder({Expr(10)}, runtime::kFloat32, "A");
  Tensor B = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return A(i[0]) + 1; }, "B");
  Tensor C = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return B(i[0]) * 2; }, "C");
  Tensor D = compute(
      {Expr(10)}, [&](const std::vector<Var>& i) { return B(i[0]) * 3; }, "D");
  Schedule s({C, D});
  s[B].compute_at(s[C], s[C].loop("i"));
  std::string msg = error_of([&] { lower(s, {A, C, D}); });
  EXPECT_TRUE(contains(msg, "stage D reads B outside the loop i of C")) << msg;
}

TEST(ScheduleErrors, PrefetchNeedsATensorReadAroundTheLoop) {
  Matmul mm = matmul(8, 8, 8);
  Matmul other = matmul(8, 8, 8);
  Schedule s({mm.C});
  Stage& c = s[mm.C];
  std::string msg = error_of([&] { c.prefetch(mm.A, c.loop("k"), c, c.loop("i"), 0); });
  EXPECT_TRUE(contains(msg, "offset must be at least 1, got 0")) << msg;
  msg = error_of([&] { c.prefetch(other.A, c.loop("k"), c, c.loop("i"), 1); });
  EXPECT_TRUE(contains(msg, "not part of this schedule")) << msg;
  msg = error_of([&] { c.prefetch(mm.A, c.loop("q"), c, c.loop("i"), 1); });
  EXPECT_TRUE(contains(msg, "stage C has no loop 'q'")) << msg;
  // `from` must be `at` or a loop around it.
  c.prefetch(mm.A, c.loop("i"), c, c.loop("k"), 1);
  msg = error_of([&] { lower(s, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(contains(msg, "prefetch of A on stage C: loop k is inside i")) << msg;
  // A loop split after the prefetch no longer surrounds the computation.
  Schedule t({mm.C});
  t[mm.C].prefetch(mm.B, t[mm.C].loop("k"), t[mm.C], t[mm.C].loop("i"), 1);
  t[mm.C].split(t[mm.C].loop("k"), 2);
  msg = error_of([&] { lower(t, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(contains(msg, "its at loop k is not a loop around the stage's computation")) << msg;
  // `from` may be a loop fused into a current one, not one split.
  Schedule w({mm.C});
  Loop i = w[mm.C].loop("i");
  w[mm.C].split(i, 2);
  msg = error_of([&] { w[mm.C].prefetch(mm.A, w[mm.C].loop("k"), w[mm.C], i, 1); });
  EXPECT_TRUE(contains(msg, "stage C: loop i is neither a current loop nor fused into one")) << msg;
  // The tensor must be read by the stage itself, not only by a stage computed before it.
  Tensor A2 = compute(
      {Expr(8), Expr(8)}, [&](const std::vector<Var>& i) { return mm.A(i[0], i[1]) * 2; }, "A2");
  IterVar k = reduce_axis(Range(Expr(0), Expr(8)), "k");
  Tensor D = compute(
      {Expr(8), Expr(8)}, [&](const std::vector<Var>& i) { return sum(A2(i[0], k) * mm.B(k, i[1]), {k}); }, "D");
  Schedule u({D});
  u[D].prefetch(mm.A, u[D].loop("k"), u[D], u[D].loop("i"), 1);
  msg = error_of([&] { lower(u, {mm.A, mm.B, D}); });
  EXPECT_TRUE(contains(msg, "prefetch: stage D does not read A itself")) << msg;
  msg = error_of([&] {
    Schedule v({mm.C});
    v[mm.C].prefetch(A2, v[mm.C].loop("k"), v[mm.C], v[mm.C].loop("i"), 1);
  });
  EXPECT_TRUE(contains(msg, "not part of this schedule")) << msg;
}

TEST(ScheduleErrors, LowerChecksArguments) {
  Matmul mm = matmul(4, 4, 4);
  Schedule s({mm.C});
  std::string msg = error_of([&] { lower(s, {mm.A, mm.B}); });
  EXPECT_TRUE(contains(msg, "output C must be one of the arguments")) << msg;
  msg = error_of([&] { lower(s, {mm.A, mm.C}); });
  EXPECT_TRUE(contains(msg, "tensor B is used but is neither an argument")) << msg;
}

TEST(ScheduleErrors, WrongShapesAtCallTime) {
  Matmul mm = matmul(4, 4, 4);
  Schedule s({mm.C});
  LoweredFunc f = lower(s, {mm.A, mm.B, mm.C}, "kernel");
  auto module = targets::build({f}, targets::Target::parse("llvm"));
  runtime::Kernel kernel = module->get_kernel("kernel");
  NDArray good = NDArray::empty({4, 4}, runtime::kFloat32);
  NDArray wrong = NDArray::empty({4, 5}, runtime::kFloat32);
  NDArray ints = NDArray::empty({4, 4}, runtime::kInt32);
  std::string msg = error_of([&] { kernel({good, wrong, good}); });
  EXPECT_TRUE(contains(msg, "argument 1 ('B'): expected shape (4, 4), got (4, 5)")) << msg;
  msg = error_of([&] { kernel({good, good, ints}); });
  EXPECT_TRUE(contains(msg, "expected dtype float32, got int32")) << msg;
  msg = error_of([&] { kernel({good, good}); });
  EXPECT_TRUE(contains(msg, "takes 3 arguments, got 2")) << msg;
}

}  // namespace
}  // namespace tessera::schedule::testing

namespace tessera::schedule::testing {
namespace {

TEST(ScheduleErrors, BindNamesTheStageLoopAndAxis) {
  Matmul mm = matmul(8, 8, 8);
  Schedule s({mm.C});
  Stage& c = s[mm.C];
  auto [io, ii] = c.split(c.loop("i"), 2);
  Loop i_outer = io, i_inner = ii, j = c.loop("j");
  std::string msg = error_of([&] { c.bind(i_outer, "threadIdx.w"); });
  EXPECT_TRUE(contains(msg, "bind of C.i.outer: unknown thread axis 'threadIdx.w'")) << msg;
  msg = error_of([&] { c.bind(c.loop("k"), "blockIdx.y"); });
  EXPECT_TRUE(contains(msg, "bind of C.k: it is a reduction loop, which only threadIdx axes can share")) << msg;
  msg = error_of([&] { c.bind(c.loop("k"), kVirtualThread); });
  EXPECT_TRUE(contains(msg, "bind of C.k: it is a reduction loop")) << msg;
  c.bind(i_outer, "blockIdx.x");
  msg = error_of([&] { c.bind(i_outer, "blockIdx.y"); });
  EXPECT_TRUE(contains(msg, "bind of C.i.outer: the loop is already bound to blockIdx.x")) << msg;
  msg = error_of([&] { c.bind(j, "blockIdx.x"); });
  EXPECT_TRUE(contains(msg, "bind of C.j: blockIdx.x is already bound to loop i.outer of this stage")) << msg;
  c.vectorize(i_inner);
  msg = error_of([&] { c.bind(i_inner, "threadIdx.x"); });
  EXPECT_TRUE(contains(msg, "bind of C.i.inner: the loop is vectorized")) << msg;
  msg = error_of([&] { c.parallel(i_outer); });
  EXPECT_TRUE(contains(msg, "parallel on stage C: loop i.outer is bound to blockIdx.x")) << msg;
  msg = error_of([&] { c.split(i_outer, 2); });
  EXPECT_TRUE(contains(msg, "split on stage C: loop i.outer is bound to blockIdx.x")) << msg;
  // Several virtual threads may share the tag.
  c.bind(j, kVirtualThread);
  EXPECT_EQ(j->thread_tag, "vthread");
  // A CPU has no thread axes; a device has no thread pool.
  msg = error_of([&] { lower(s, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(contains(msg, "loop i.outer of stage C is bound to blockIdx.x")) << msg;
  Matmul other = matmul(8, 8, 8);
  Schedule p({other.C});
  p[other.C].parallel(p[other.C].loop("i"));
  msg = error_of([&] { lower_for_device(p, {other.A, other.B, other.C}); });
  EXPECT_TRUE(contains(msg, "loop i of stage C is parallel")) << msg;
}

TEST(ScheduleErrors, ScopesAreChecked) {
  Matmul mm = matmul(8, 8, 8);
  Schedule s({mm.C});
  std::string msg = error_of([&] { s.cache_read(mm.A, "shard", {mm.C}); });
  EXPECT_TRUE(contains(msg, "cache_read of A: 'shard' is not a storage scope (global, shared or local)")) << msg;
  msg = error_of([&] { s.cache_write(mm.C, "register"); });
  EXPECT_TRUE(contains(msg, "cache_write of C: 'register' is not a storage scope")) << msg;
  msg = error_of([&] { s[mm.C].set_scope("shared"); });
  EXPECT_TRUE(contains(msg, "set_scope of C: it is an output of the schedule")) << msg;
  msg = error_of([&] { s[mm.A].set_scope("shared"); });
  EXPECT_TRUE(contains(msg, "set_scope: A is an input")) << msg;
  Tensor al = s.cache_read(mm.A, "global", {mm.C});
  msg = error_of([&] { s[al].set_scope("Shared"); });
  EXPECT_TRUE(contains(msg, "set_scope of A.global: 'Shared' is not a storage scope")) << msg;
  s[al].set_scope("shared");
  EXPECT_EQ(s[al].scope(), "shared");
}

// A cross-thread reduction reduces over one thread axis, outermost among its reduction loops.
TEST(ScheduleErrors, CrossThreadReductionShape) {
  Matmul mm = matmul(8, 8, 32);
  Schedule s({mm.C});
  Stage& c = s[mm.C];
  auto [ko, ki] = c.split(c.loop("k"), 8);
  Loop k_outer = ko, k_inner = ki;
  c.bind(c.loop("i"), "blockIdx.x");
  c.bind(k_inner, "threadIdx.x");
  std::string msg = error_of([&] { lower_for_device(s, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(contains(msg,
                       "cross-thread reduction of stage C: its reduction loop bound to a thread axis must be the "
                       "outermost of its reduction loops, not k.outer"))
      << msg;
  c.reorder({k_inner, k_outer, c.loop("j")});
  msg = error_of([&] { lower_for_device(s, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(contains(msg, "data-parallel loop j must come before its reduction loops")) << msg;
  c.reorder({c.loop("j"), k_inner, k_outer});
  c.bind(k_outer, "threadIdx.y");
  msg = error_of([&] { lower_for_device(s, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(
      contains(msg, "it reduces across threadIdx.x (loop k.inner); loop k.outer cannot be bound to threadIdx.y"))
      << msg;
}

// A stage computed inside a block's threads that binds more iterations to a thread axis than the
// block has threads would leave work undone.
TEST(ScheduleErrors, CooperativeLoopWiderThanTheBlock) {
  Matmul mm = matmul(16, 16, 16);
  Schedule s({mm.C});
  Tensor as = s.cache_read(mm.A, "shared", {mm.C});
  Stage& c = s[mm.C];
  auto [io, ii] = c.split(c.loop("i"), 4);
  c.bind(io, "blockIdx.x");
  c.bind(ii, "threadIdx.x");
  s[as].compute_at(c, c.loop("j"));
  Loop fused = s[as].fuse(s[as].loop("ax0"), s[as].loop("ax1"));
  auto [fo, fi] = s[as].split(fused, 8);
  s[as].bind(fi, "threadIdx.x");
  std::string msg = error_of([&] { lower_for_device(s, {mm.A, mm.B, mm.C}); });
  EXPECT_TRUE(contains(msg,
                       "loop ax0.ax1.fused.inner is bound to threadIdx.x with 8 iterations, but the launch it "
                       "runs in has 4 threads along threadIdx.x (loop i.inner)"))
      << msg;
}

}  // namespace
}  // namespace tessera::schedule::testing
