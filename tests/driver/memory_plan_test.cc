// Memory planning: intermediates whose lifetimes do not overlap share arena slots.
#include <gtest/gtest.h>

#include "driver/memory_plan.h"

namespace tessera::driver {
namespace {

using Info = runtime::GraphPlan::TensorInfo;

TEST(MemoryPlan, ReusesSlotsOfDeadTensors) {
  // in -> t1 -> t2 -> t3 -> out, each 1 KiB: two slots suffice (a step reads one, writes one).
  runtime::GraphPlan plan;
  auto add = [&](Info::Kind k) {
    plan.tensors.push_back({k, "t", {256}, runtime::kFloat32, -1});
    return static_cast<int>(plan.tensors.size()) - 1;
  };
  int in = add(Info::Input), t1 = add(Info::Intermediate), t2 = add(Info::Intermediate), t3 = add(Info::Intermediate),
      out = add(Info::Output);
  plan.steps = {{"k", {in, t1}}, {"k", {t1, t2}}, {"k", {t2, t3}}, {"k", {t3, out}}};
  plan_memory(plan);
  EXPECT_EQ(plan.arena_bytes, 2 * 1024);
  EXPECT_NE(plan.tensors[t1].index, plan.tensors[t2].index);
  EXPECT_EQ(plan.tensors[t1].index, plan.tensors[t3].index);
}

TEST(MemoryPlan, KeepsTensorsThatAreStillNeeded) {
  runtime::GraphPlan plan;
  auto add = [&](Info::Kind k, int64_t n) {
    plan.tensors.push_back({k, "t", {n}, runtime::kFloat32, -1});
    return static_cast<int>(plan.tensors.size()) - 1;
  };
  int in = add(Info::Input, 16), a = add(Info::Intermediate, 16), b = add(Info::Intermediate, 16),
      c = add(Info::Intermediate, 16), out = add(Info::Output, 16);
  // a is read again at the last step, so b and c cannot take its slot.
  plan.steps = {{"k", {in, a}}, {"k", {a, b}}, {"k", {b, c}}, {"k", {a, c, out}}};
  plan_memory(plan);
  EXPECT_NE(plan.tensors[a].index, plan.tensors[b].index);
  EXPECT_NE(plan.tensors[a].index, plan.tensors[c].index);
  EXPECT_EQ(plan.tensors[b].index == plan.tensors[c].index, false);
}

}  // namespace
}  // namespace tessera::driver

namespace tessera::driver {
namespace {

TEST(MemoryPlan, ElementwiseStepsWriteInPlace) {
  runtime::GraphPlan plan;
  auto add = [&](Info::Kind k) {
    plan.tensors.push_back({k, "t", {256}, runtime::kFloat32, -1});
    return static_cast<int>(plan.tensors.size()) - 1;
  };
  int in = add(Info::Input), t1 = add(Info::Intermediate), t2 = add(Info::Intermediate), t3 = add(Info::Intermediate),
      out = add(Info::Output);
  plan.steps = {{"k", {in, t1}, true}, {"k", {t1, t2}, true}, {"k", {t2, t3}, true}, {"k", {t3, out}, true}};
  plan_memory(plan);
  EXPECT_EQ(plan.arena_bytes, 1024);  // one buffer, updated in place three times
  EXPECT_EQ(plan.tensors[t1].index, plan.tensors[t3].index);
}

TEST(MemoryPlan, ViewsKeepTheirStorageAlive) {
  runtime::GraphPlan plan;
  auto add = [&](Info::Kind k, std::vector<int64_t> shape) {
    plan.tensors.push_back({k, "t", std::move(shape), runtime::kFloat32, -1});
    return static_cast<int>(plan.tensors.size()) - 1;
  };
  int in = add(Info::Input, {64}), a = add(Info::Intermediate, {64}), view = add(Info::Intermediate, {8, 8}),
      b = add(Info::Intermediate, {64}), out = add(Info::Output, {64});
  plan.tensors[view].alias_of = a;
  // a is last read through its view at the final step, so b must not take its slot.
  plan.steps = {{"k", {in, a}}, {"k", {in, b}}, {"k", {view, b, out}}};
  plan_memory(plan);
  EXPECT_NE(plan.tensors[a].index, plan.tensors[b].index);
  EXPECT_EQ(plan.tensors[view].index, -1);  // a view has no slot of its own
}

}  // namespace
}  // namespace tessera::driver
