// build(): graphs of operator calls compile and run on the graph executor.
#include <gtest/gtest.h>

#include "driver/build.h"
#include "relay_ir/expr.h"
#include "runtime/error.h"

namespace tessera::driver {
namespace {

using namespace relay_ir;
using runtime::NDArray;

NDArray filled(std::vector<int64_t> shape, float start) {
  NDArray a = NDArray::empty(std::move(shape), runtime::kFloat32);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = start + static_cast<float>(i);
  return a;
}

TEST(Build, RunsAChainOfOps) {
  Var x("x", tensor_type({2, 3}, runtime::kFloat32));
  Expr bias = constant(filled({3}, -3));
  Expr y = call("relu", {call("add", {x, bias})});
  Module m(function({x}, y));
  for (int opt_level : {0, 2}) {
    BuildOptions options;
    options.opt_level = opt_level;
    BuildResult r = build(m, targets::Target::parse("llvm"), options);
    auto out = r.executor->run({filled({2, 3}, 0)});
    ASSERT_EQ(out.size(), 1u);
    // x + bias = [0-3, 1-2, 2-1, 3-3, 4-2, 5-1] -> relu
    std::vector<float> expected{0, 0, 1, 0, 2, 4};
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], expected[i]);
    // Level 2 fuses the bias add and the relu into one kernel.
    ASSERT_EQ(r.kernels.size(), opt_level == 0 ? 2u : 1u);
    if (opt_level == 2) {
      EXPECT_EQ(r.kernels[0].op, "fused_add_relu");
    }
  }
}

TEST(Build, IdenticalCallsShareAKernelAndTuplesFlatten) {
  Var x("x", tensor_type({4}, runtime::kFloat32));
  Expr a = call("relu", {x});
  Expr b = call("relu", {call("add", {a, a})});
  Expr c = call("relu", {call("add", {b, x})});
  Module m(function({x}, tuple({c, tuple_get(tuple({a, b}), 1), x})));
  BuildOptions unfused;
  unfused.opt_level = 0;
  BuildResult r = build(m, targets::Target::parse("llvm"), unfused);
  EXPECT_EQ(r.kernels.size(), 2u);  // one relu kernel, one add kernel
  EXPECT_EQ(r.kernels[0].calls, 3);
  NDArray in = filled({4}, -1);
  auto out = r.executor->run({in});
  ASSERT_EQ(out.size(), 3u);
  for (int i = 0; i < 4; ++i) {
    float xi = -1.0f + i, ai = std::max(xi, 0.0f), bi = 2 * ai, ci = std::max(bi + xi, 0.0f);
    EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], ci);
    EXPECT_FLOAT_EQ(out[1].data_as<float>()[i], bi);
    EXPECT_FLOAT_EQ(out[2].data_as<float>()[i], xi);  // an input returned as an output is copied
  }
}

TEST(Build, InputErrorsNameTheInput) {
  Var x("image", tensor_type({2, 2}, runtime::kFloat32));
  Module m(function({x}, call("relu", {x})));
  BuildResult r = build(m, targets::Target::parse("llvm"));
  try {
    r.executor->run({filled({3, 2}, 0)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'image': expected shape (2, 2), got (3, 2)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(r.executor->input_index("label"), Error);
}

TEST(Build, TypeErrorsNameTheNode) {
  Var x("x", tensor_type({2, 3}, runtime::kFloat32));
  Var y("y", tensor_type({4}, runtime::kFloat32));
  Module m(function({x, y}, call("add", {x, y}, {}, "Add_7")));
  try {
    build(m, targets::Target::parse("llvm"));
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("add (node 'Add_7')"), std::string::npos) << msg;
    EXPECT_NE(msg.find("do not broadcast"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tessera::driver

namespace tessera::driver {
namespace {

TEST(Build, ReshapesAreViews) {
  Var x("x", tensor_type({2, 6}, runtime::kFloat32));
  Expr r = call("reshape", {call("relu", {x})}, {{"shape", std::vector<int64_t>{3, 4}}});
  Module m(function({x}, call("relu", {call("add", {r, r})})));
  BuildOptions unfused;
  unfused.opt_level = 0;
  BuildResult result = build(m, targets::Target::parse("llvm"), unfused);
  for (const auto& k : result.kernels) EXPECT_NE(k.op, "reshape");
  auto out = result.executor->run({filled({2, 6}, -5)});
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], 2 * std::max(-5.0f + i, 0.0f));
}

}  // namespace
}  // namespace tessera::driver
