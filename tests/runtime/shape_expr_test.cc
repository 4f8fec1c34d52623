// Symbolic dimensions as the runtime keeps them (runtime/shape_expr.h): printing and parsing back,
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

TEST(ShapeExpr, PrintsAndParsesBack) {
  using Op = ShapeExpr::Op;
  const ShapeExpr n = ShapeExpr::var("n"), l = ShapeExpr::var("seq_len");
  const ShapeExpr e = ShapeExpr::binary(
      Op::Add, ShapeExpr::binary(Op::FloorDiv, ShapeExpr::binary(Op::Sub, n, 3), 2),
      ShapeExpr::binary(Op::Mul, ShapeExpr::binary(Op::Max, l, 1), ShapeExpr::binary(Op::FloorMod, n, -4)));
  EXPECT_EQ(e.str(), "(floordiv((n - 3), 2) + max(seq_len, 1)*floormod(n, -4))");
  EXPECT_TRUE(ShapeExpr::parse(e.str()) == e);
  EXPECT_EQ(ShapeExpr::parse("n - -4").str(), "(n - -4)");
  EXPECT_EQ(ShapeExpr::parse("-n").str(), "(0 - n)");
  EXPECT_EQ(ShapeExpr::parse(" n * 64 ").str(), "n*64");
  EXPECT_EQ(ShapeExpr::parse("min(a.b_1, 7)").str(), "min(a.b_1, 7)");
  EXPECT_TRUE(ShapeExpr::parse("12").is_constant());
  EXPECT_EQ(*ShapeExpr::parse("n").var_name(), "n");
  EXPECT_EQ(ShapeExpr::parse("n + 0").var_name(), nullptr);
  std::vector<std::string> vars;
  e.collect_vars(vars);
  EXPECT_EQ(vars, (std::vector<std::string>{"n", "seq_len"}));
  for (const char* bad : {"", "n +", "(n", "floordiv(n)", "n ** 2", "123456789012345678901", "n)"})
    expect_error([&] { ShapeExpr::parse(bad); }, "invalid shape expression");
}

TEST(ShapeExpr, EvaluatesWithFloorSemantics) {
  const std::map<std::string, int64_t> v{{"n", 7}, {"m", -7}};
  EXPECT_EQ(ShapeExpr::parse("floordiv(n, 2)").evaluate(v), 3);
  EXPECT_EQ(ShapeExpr::parse("floordiv(m, 2)").evaluate(v), -4);
  EXPECT_EQ(ShapeExpr::parse("floormod(m, 3)").evaluate(v), 2);
  EXPECT_EQ(ShapeExpr::parse("min(n, 3)*max(m, 2) - n").evaluate(v), -1);
  expect_error([&] { ShapeExpr::parse("k + 1").evaluate(v); }, "the dimension variable k has no value");
  expect_error([&] { ShapeExpr::parse("floordiv(n, n - 7)").evaluate(v); }, "divides by zero");
}

TEST(ShapeExpr, BindsVariablesFromTheCallsShapes) {
  const ShapeExpr n = ShapeExpr::var("n"), l = ShapeExpr::var("L");
  const std::vector<SymbolicShape> expected{{n, l, 64}, {ShapeExpr::parse("n*L"), 64}};
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
