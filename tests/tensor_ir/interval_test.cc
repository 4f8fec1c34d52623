// Symbolic intervals and constant bounds, as bound inference uses them.
#include <gtest/gtest.h>

#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/arith/interval.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {
namespace {

using arith::Interval;

TEST(Interval, InnerLoopsRangeOuterStayFixed) {
  Var io("io"), ii("ii"), k("k");
  arith::IntervalMap dom{{ii.get(), {Expr(0), Expr(7)}}};
  Interval r = arith::eval_interval(io * 8 + ii, dom);
  EXPECT_EQ(to_string(r.min), "io*8");
  EXPECT_EQ(to_string(r.max), "io*8 + 7");
  EXPECT_EQ(to_string(r.to_range().extent), "8");
}

TEST(Interval, StencilWindow) {
  Var i("i"), r("r");
  arith::IntervalMap dom{{i.get(), {Expr(0), Expr(9)}}, {r.get(), {Expr(0), Expr(2)}}};
  Interval x = arith::eval_interval(i * 2 + r - 1, dom);
  EXPECT_EQ(to_string(x.min), "-1");
  EXPECT_EQ(to_string(x.max), "19");
}

TEST(Interval, DivModAndMinMax) {
  Var f("f"), o("o");
  arith::IntervalMap dom{{f.get(), {Expr(0), Expr(47)}}};
  EXPECT_EQ(to_string(arith::eval_interval(floordiv(f, 8), dom).max), "5");
  Interval m = arith::eval_interval(floormod(f, 8), dom);
  EXPECT_EQ(to_string(m.min), "0");
  EXPECT_EQ(to_string(m.max), "7");
  arith::IntervalMap dom2{{f.get(), {o * 4, o * 4 + 3}}};
  Interval exact = arith::eval_interval(floormod(f, 16), dom2);
  EXPECT_EQ(to_string(exact.max), "o % 4*4 + 3");  // o*4 .. o*4 + 3 stays in one block of 16
  arith::IntervalMap dom3{{f.get(), {o * 4, o * 4 + 5}}};
  EXPECT_EQ(to_string(arith::eval_interval(floormod(f, 16), dom3).max), "15");  // may cross one: [0, 15]
  EXPECT_EQ(to_string(arith::eval_interval(min(f, Expr(10)), dom).max), "10");
  EXPECT_FALSE(arith::eval_interval(f * f, dom).bounded());
}

TEST(ConstBound, Arithmetic) {
  Var i("i"), j("j");
  arith::BoundMap b{{i.get(), {0, 9}}, {j.get(), {-3, 3}}};
  auto c = arith::const_bound(i * 4 - j, b);
  EXPECT_EQ(c.min, -3);
  EXPECT_EQ(c.max, 39);
  c = arith::const_bound(floormod(j, 4), b);
  EXPECT_EQ(c.min, 0);
  EXPECT_EQ(c.max, 3);
  c = arith::const_bound(cast(runtime::DataType::UInt(8), Var("x", runtime::kInt32)), {});
  EXPECT_EQ(c.min, 0);
  EXPECT_EQ(c.max, 255);
  EXPECT_FALSE(arith::const_bound(i * Var("n"), b).bounded());
}

}  // namespace
}  // namespace tessera::tensor_ir
