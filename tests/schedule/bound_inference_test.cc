// Bound inference: regions of stages computed at a loop, and buffer sizes that do not grow
// with the enclosing loop variables.
#include <gtest/gtest.h>

#include "schedule/bound_inference.h"
#include "schedule_test_util.h"

namespace tessera::schedule::testing {
namespace {

// The buffer extents of a stage, as "10, 20".
std::string extents(const StagePlan& p) {
  std::string s;
  for (const Expr& e : p.buffer_extent) s += (s.empty() ? "" : ", ") + to_string(e);
  return s;
}

TEST(BoundInference, RootStagesCoverTheirDomain) {
  Matmul mm = matmul(10, 20, 30);
  Schedule s({mm.C});
  LoweringPlan plan = infer_bounds(s);
  const StagePlan& c = plan.of(&s[mm.C]);
  EXPECT_EQ(to_string(c.region[0].extent), "10");
  EXPECT_EQ(extents(c), "10, 20");
  EXPECT_TRUE(c.predicates.empty());
}

TEST(BoundInference, ComputeAtRegionFollowsTheConsumerLoop) {
  Tensor A = placeholder({Expr(30)}, runtime::kFloat32, "A");
  Tensor B = compute(
      {Expr(30)}, [&](const std::vector<Var>& i) { return A(i[0]) + 1; }, "B");
  IterVar r = reduce_axis(Range(Expr(0), Expr(3)), "r");
  Tensor C = compute(
      {Expr(28)}, [&](const std::vector<Var>& i) { return sum(B(i[0] + r), {r}); }, "C");
  Schedule s({C});
  auto [io, ii] = s[C].split(s[C].loop("i"), 8);
  s[B].compute_at(s[C], io);
  LoweringPlan plan = infer_bounds(s);
  const StagePlan& b = plan.of(&s[B]);
  EXPECT_EQ(to_string(b.region[0].min), "i.outer*8");
  EXPECT_EQ(extents(b), "10");  // 8 outputs + a window of 3
  // The last block is clipped to B's domain: 28 = 3*8 + 4 outputs need B[24:30].
  const StagePlan& c = plan.of(&s[C]);
  ASSERT_EQ(c.predicates.size(), 1u);
  EXPECT_EQ(to_string(c.predicates[0]), "likely(i.outer*8 + i.inner < 28)");
}

TEST(BoundInference, PredicatesOnlyForUnevenSplits) {
  Matmul mm = matmul(16, 20, 8);
  Schedule s({mm.C});
  s[mm.C].split(s[mm.C].loop("i"), 4);
  s[mm.C].split(s[mm.C].loop("j"), 8);
  LoweringPlan plan = infer_bounds(s);
  const StagePlan& c = plan.of(&s[mm.C]);
  ASSERT_EQ(c.predicates.size(), 1u);
  EXPECT_EQ(to_string(c.predicates[0]), "likely(j.outer*8 + j.inner < 20)");
}

// TVM's rule for a stage computed inside thread-bound loops: a shared buffer covers what all the
// threads of its block read (threadIdx relaxed, blockIdx kept), a local one what its thread reads,
// a global one what every block reads.
TEST(BoundInference, ScopesRelaxTheThreadsThatShareTheBuffer) {
  for (const char* scope : {"shared", "local", "global"}) {
    SCOPED_TRACE(scope);
    Matmul mm = matmul(19, 37, 11);
    Schedule s({mm.C});
    Tensor as = s.cache_read(mm.A, scope, {mm.C});
    Stage& c = s[mm.C];
    auto [io, ii] = c.split(c.loop("i"), 4);
    c.bind(io, "blockIdx.x");
    c.bind(ii, "threadIdx.x");
    s[as].compute_at(c, c.loop("j"));
    LoweringPlan plan = infer_bounds(s);
    const StagePlan& a = plan.of(&s[as]);
    std::string scope_name = scope;
    if (scope_name == "shared") {
      EXPECT_EQ(to_string(a.region[0].min), "i.outer*4");
      EXPECT_EQ(extents(a), "4, 11");
    } else if (scope_name == "local") {
      EXPECT_EQ(to_string(a.region[0].min), "i.outer*4 + i.inner");
      EXPECT_EQ(extents(a), "1, 11");
    } else {
      EXPECT_EQ(to_string(a.region[0].min), "0");
      EXPECT_EQ(extents(a), "19, 11");
    }
  }
}

}  // namespace
}  // namespace tessera::schedule::testing
