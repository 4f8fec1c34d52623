// Symbolic dimensions as the runtime keeps them (runtime/shape_expr.h): printing, comparison,
// evaluation, and binding a call's shapes to a kernel's dimension variables with errors that name
// the argument, the dimension and where each variable's value came from.
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "runtime/shape_expr.h"

namespace tessera::runtime {
namespace {

template <typename F>
void expect_error(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

using Op = ShapeExpr::Op;
ShapeExpr var(const char* name) { return ShapeExpr::var(name); }
ShapeExpr operator+(const ShapeExpr& a, const ShapeExpr& b) { return ShapeExpr::binary(Op::Add, a, b); }
ShapeExpr operator-(const ShapeExpr& a, const ShapeExpr& b) { return ShapeExpr::binary(Op::Sub, a, b); }
ShapeExpr operator*(const ShapeExpr& a, const ShapeExpr& b) { return ShapeExpr::binary(Op::Mul, a, b); }
ShapeExpr call(Op op, const ShapeExpr& a, const ShapeExpr& b) { return ShapeExpr::binary(op, a, b); }

TEST(ShapeExpr, PrintsAndCompares) {
  const ShapeExpr n = var("n"), l = var("seq_len");
  const ShapeExpr e = call(Op::FloorDiv, n - 3, 2) + call(Op::Max, l, 1) * call(Op::FloorMod, n, -4);
  EXPECT_EQ(e.str(), "(floordiv((n - 3), 2) + max(seq_len, 1)*floormod(n, -4))");
  EXPECT_TRUE(e == call(Op::FloorDiv, n - 3, 2) + call(Op::Max, l, 1) * call(Op::FloorMod, n, -4));
  EXPECT_TRUE(e != call(Op::FloorDiv, n - 3, 2) + call(Op::Max, l, 2) * call(Op::FloorMod, n, -4));
  EXPECT_TRUE(ShapeExpr(12).is_constant());
  EXPECT_EQ(*n.var_name(), "n");
  EXPECT_EQ((n + 0).var_name(), nullptr);
  std::vector<std::string> vars;
  e.collect_vars(vars);
  EXPECT_EQ(vars, (std::vector<std::string>{"n", "seq_len"}));
  expect_error([&] { ShapeExpr::var(""); }, "a dimension variable needs a name");
  expect_error([&] { n.constant(); }, "the dimension n is not a constant");
}

TEST(ShapeExpr, EvaluatesWithFloorSemantics) {
  const std::map<std::string, int64_t> v{{"n", 7}, {"m", -7}};
  const ShapeExpr n = var("n"), m = var("m");
  EXPECT_EQ(call(Op::FloorDiv, n, 2).evaluate(v), 3);
  EXPECT_EQ(call(Op::FloorDiv, m, 2).evaluate(v), -4);
  EXPECT_EQ(call(Op::FloorMod, m, 3).evaluate(v), 2);
  EXPECT_EQ((call(Op::Min, n, 3) * call(Op::Max, m, 2) - n).evaluate(v), -1);
  expect_error([&] { (var("k") + 1).evaluate(v); }, "the dimension variable k has no value");
  expect_error([&] { call(Op::FloorDiv, n, n - 7).evaluate(v); }, "divides by zero");
}

TEST(ShapeExpr, BindsVariablesFromTheCallsShapes) {
  const ShapeExpr n = var("n"), l = var("L");
  const std::vector<SymbolicShape> expected{{n, l, 64}, {n * l, 64}};
  const std::vector<std::string> names{"argument 'x'", "argument 'y'"};
  auto values = bind_shape_vars(expected, {{2, 5, 64}, {10, 64}}, names, "kernel 'k'");
  EXPECT_EQ(values.at("n"), 2);
  EXPECT_EQ(values.at("L"), 5);
  expect_error(
      [&] {
        bind_shape_vars(expected, {{2, 5, 64}, {11, 64}}, names, "kernel 'k'");
      },
      "kernel 'k' argument 'y' (#1): dimension 0 must be n*L = 10 (n = 2 from argument 'x' dimension 0, "
      "L = 5 from argument 'x' dimension 1), got 11 (shape (11, 64), expected (n*L, 64))");
  expect_error(
      [&] {
        bind_shape_vars(expected, {{2, 5, 63}, {10, 64}}, names, "kernel 'k'");
      },
      "argument 'x' (#0): dimension 2 must be 64, got 63");
  expect_error(
      [&] {
        bind_shape_vars(expected, {{2, 5}, {10, 64}}, names, "kernel 'k'");
      },
      "expected 3 dimensions (n, L, 64), got 2");
  EXPECT_TRUE(is_static(symbolic_shape({3, 4})));
  EXPECT_TRUE(equals(symbolic_shape({3, 4}), {3, 4}));
  EXPECT_FALSE(equals(symbolic_shape({3, 4}), {3, 5}));
  EXPECT_FALSE(equals(symbolic_shape({3}), {3, 1}));
  EXPECT_FALSE(equals(expected[0], {2, 5, 64}));  // symbolic: not a static shape
  EXPECT_FALSE(is_static(expected[0]));
  expect_error([&] { static_shape(expected[1], "buffer 'y'"); }, "buffer 'y' has the symbolic shape (n*L, 64)");
}

}  // namespace
}  // namespace tessera::runtime
