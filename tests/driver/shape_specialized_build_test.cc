// ShapeSpecializedBuild: builds per size share their constants and keep the most recently used.
#include <gtest/gtest.h>

#include "driver/constant_pool.h"
#include "driver/shape_specialized_build.h"
#include "relay_ir/expr.h"

namespace tessera::driver {
namespace {

using namespace relay_ir;
using runtime::NDArray;

// y = x @ w + 1 for x of shape (n, 8): the weight w does not depend on n.
Module matmul_at(int64_t n) {
  NDArray w = NDArray::empty({8, 4}, runtime::kFloat32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data_as<float>()[i] = 0.5f * static_cast<float>(i % 7);
  Var x("x", tensor_type({n, 8}, runtime::kFloat32));
  return Module(function({x}, call("add", {call("matmul", {x, constant(w)}), scalar(1, runtime::kFloat32)})));
}

ShapeSpecializedBuild matmul_build() {
  runtime::BufferSpec x{"x", {runtime::ShapeExpr::var("N"), runtime::ShapeExpr(8)}, runtime::kFloat32};
  return ShapeSpecializedBuild(
      {x}, [](const auto& shapes) { return matmul_at(shapes.at("x")[0]); }, targets::Target::parse("llvm"),
      BuildOptions{});
}

TEST(ShapeSpecializedBuild, BuildsOfSeveralSizesShareTheirConstants) {
  ShapeSpecializedBuild b = matmul_build();
  auto two = b.get({{2, 8}}), five = b.get({{5, 8}});
  ASSERT_FALSE(two->plan.constants.empty());
  ASSERT_EQ(two->plan.constants.size(), five->plan.constants.size());
  for (size_t i = 0; i < two->plan.constants.size(); ++i)
    EXPECT_EQ(two->plan.constants[i].data(), five->plan.constants[i].data()) << "constant " << i;
  EXPECT_EQ(b.get({{2, 8}}), two);  // kept
}

TEST(ShapeSpecializedBuild, DropsTheLeastRecentlyUsedSizePastItsLimit) {
  ShapeSpecializedBuild b = matmul_build();
  std::weak_ptr<const BuildResult> first = b.get({{1, 8}}), third;
  for (int64_t n = 2; n <= static_cast<int64_t>(ShapeSpecializedBuild::kMaxKept); ++n) {
    std::shared_ptr<const BuildResult> built = b.get({{n, 8}});
    if (n == 3) third = built;
    b.get({{1, 8}});  // size 1 stays the most recently used
  }
  std::weak_ptr<const BuildResult> second = b.get({{2, 8}});
  EXPECT_FALSE(third.expired());
  b.get({{100, 8}});  // one more than the limit: size 3, the least recently used, goes
  EXPECT_TRUE(third.expired());
  EXPECT_FALSE(first.expired());
  EXPECT_FALSE(second.expired());
  EXPECT_EQ(b.built().size(), ShapeSpecializedBuild::kMaxKept + 1);  // the history keeps every size
}

TEST(ConstantPool, InternsEqualArraysOnceAndKeepsDifferentOnes) {
  ConstantPool pool;
  auto array = [](std::vector<float> v, std::vector<int64_t> shape) {
    NDArray a = NDArray::empty(shape, runtime::kFloat32);
    std::copy(v.begin(), v.end(), a.data_as<float>());
    return a;
  };
  std::vector<NDArray> first = {array({1, 2, 3, 4}, {4}), array({1, 2, 3, 4}, {2, 2})};
  std::vector<NDArray> second = {array({1, 2, 3, 4}, {4}), array({1, 2, 3, 5}, {4})};
  pool.intern(first);
  const void* kept = first[0].data();
  pool.intern(second);
  EXPECT_EQ(second[0].data(), kept);            // equal: interned once
  EXPECT_NE(second[1].data(), kept);            // other values
  EXPECT_NE(first[1].data(), first[0].data());  // other shape
  EXPECT_EQ(pool.size(), 3u);
}

}  // namespace
}  // namespace tessera::driver
