// The text format: what the printer writes, and that the parser reads it back to the same graph.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "relay_ir/parser.h"
#include "relay_ir/printer.h"
#include "relay_ir/structural.h"
#include "runtime/error.h"
#include "relay_ir/transforms/infer_type.h"
#include "graphs.h"
#include "runtime/half.h"

namespace tessera::relay_ir {
namespace {

using runtime::kFloat32;
using testing::constant_of;
using testing::f32;

// Parses, prints, and checks the text comes back unchanged.
void expect_canonical(const std::string& text) {
  Module m = parse_module(text);
  EXPECT_EQ(to_text(m), text);
}

// Prints, parses, and checks the graph comes back structurally equal (and hashes alike).
Module expect_round_trip(const Module& m) {
  std::string text = to_text(m);
  Module back = parse_module(text);
  EXPECT_TRUE(structural_equal(back, m)) << text;
  EXPECT_EQ(structural_hash(back), structural_hash(m)) << text;
  EXPECT_EQ(to_text(back), text);
  return back;
}

const char* kCnnText =
    "def @main(%x: float32[1, 4, 8, 8], %\"onnx::Conv_12\": float32[1, 4, 1, 1]) -> (float32[1, 4, 8, 8], float32[1, "
    "4, 8, 8]) {\n"
    "  %0 = add(%x, %\"onnx::Conv_12\");\n"
    "  %1 = add(%0, constant(float32[1, 4, 1, 1], [0.5, 1, 2, 3]));\n"
    "  %2 = (%1, %0);\n"
    "  %3 = %2.0;\n"
    "  %4 = fn [primitive=1] (%p0: float32[1, 4, 8, 8]) -> float32[1, 4, 8, 8] {\n"
    "    relu(%p0)\n"
    "  };\n"
    "  %5 = %4(%3);\n"
    "  (%5, %0)\n"
    "}\n";

TEST(RelayText, SmallCnnPrintsAsWritten) {
  Var x("x", f32({1, 4, 8, 8}));
  Var w("onnx::Conv_12", f32({1, 4, 1, 1}));
  Expr a0 = call("add", {x, w});
  Expr a1 = call("add", {a0, constant_of<float>(kFloat32, {1, 4, 1, 1}, {0.5f, 1, 2, 3})});
  Expr item = tuple_get(tuple({a1, a0}), 0);
  Var p0("p0", f32({1, 4, 8, 8}));
  Function fused = function({p0}, call("relu", {p0}), {{"primitive", int64_t(1)}});
  Module m(function({x, w}, tuple({call_function(fused, {item}), a0})));
  infer_type(m);
  EXPECT_EQ(to_text(m), kCnnText);
  EXPECT_TRUE(structural_equal(parse_module(kCnnText), m));
  expect_canonical(kCnnText);
}

TEST(RelayText, ManyFeaturesRoundTrip) {
  Var x("x", f32({2, 3}));
  Var x2("x", f32({2, 3}));  // same name, another variable
  Var digits("0", f32({3}));
  Var pair("pair", tuple_type({f32({2}), tensor_type({}, runtime::kInt64)}));
  Var single("single", tuple_type({f32({2})}));
  Var unit("unit", tuple_type({}));
  Expr shared = constant_of<float>(kFloat32, {3}, {1.5f, -2, 1e-7f});
  using runtime::float_to_half;
  Expr half = constant_of<uint16_t>(
      runtime::kFloat16, {4}, {float_to_half(0.1f), float_to_half(-65504.f), float_to_half(6e-8f), float_to_half(1)});
  Expr flags = constant_of<uint8_t>(runtime::kBool, {2}, {1, 0});
  Expr big = constant_of<int64_t>(runtime::kInt64, {3},
                                  {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0});
  Expr u64 = constant_of<uint64_t>(DataType::UInt(64), {1}, {std::numeric_limits<uint64_t>::max()});
  Expr i8 = constant_of<int8_t>(DataType::Int(8), {2}, {-128, 127});
  Expr d = constant_of<double>(runtime::kFloat64, {}, {0.1});
  Expr sum = call("add", {call("add", {x, x2}), shared});
  Expr sum2 = call("add", {digits, shared});
  // Two fused groups, both with a parameter %p0, and a projection of a tuple-typed parameter.
  Var p0("p0", f32({2, 3}));
  Function g1 = function({p0}, call("relu", {p0}), {{"primitive", int64_t(1)}});
  Var q0("p0", f32({2, 3}));
  Function g2 = function({q0}, call("add", {q0, q0}), {{"primitive", int64_t(1)}});
  Expr body = tuple({call_function(g1, {sum}), call_function(g2, {sum}), sum2, tuple_get(pair, 1), tuple_get(single, 0),
                     unit, tuple({}), tuple({half}), flags, big, u64, i8, d});
  Module m(function({x, x2, digits, pair, single, unit}, body));
  Var y("y", f32({3}));
  m.add("other func", function({y}, call("relu", {y})));
  infer_type(m);
  Module back = expect_round_trip(m);
  std::string text = to_text(back);
  EXPECT_NE(text.find("(%x: float32[2, 3], %x_1: float32[2, 3], %\"0\": float32[3], %pair: (float32[2], int64[]), "
                      "%single: (float32[2],), %unit: ())"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%1 = constant(float32[3], [1.5, -2, 1e-07]);"), std::string::npos) << text;  // used twice
  EXPECT_NE(text.find("(%pair).1"), std::string::npos) << text;
  EXPECT_NE(text.find("constant(float16[4], [0.099975586, -65504, 5.9604645e-08, 1])"), std::string::npos) << text;
  EXPECT_NE(text.find("constant(bool[2], [1, 0])"), std::string::npos) << text;
  EXPECT_NE(text.find("[-9223372036854775808, 9223372036854775807, 0]"), std::string::npos) << text;
  EXPECT_NE(text.find("constant(float64[], [0.1])"), std::string::npos) << text;
  EXPECT_NE(text.find("def @\"other func\"(%y: float32[3])"), std::string::npos) << text;
  EXPECT_EQ(text.find("p0_1"), std::string::npos) << "sibling functions reuse parameter names:\n" << text;
}

TEST(RelayText, FloatSpecialsRoundTripBitExactly) {
  float fs[] = {std::numeric_limits<float>::infinity(),
                -std::numeric_limits<float>::infinity(),
                std::numeric_limits<float>::quiet_NaN(),
                -std::numeric_limits<float>::quiet_NaN(),
                -0.0f,
                std::numeric_limits<float>::denorm_min(),
                std::numeric_limits<float>::max(),
                0.1f,
                16777217.0f};
  double ds[] = {std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(), -0.0, 1e300, 1.0 / 3};
  Expr f = constant_of<float>(kFloat32, {9}, std::vector<float>(std::begin(fs), std::end(fs)));
  Expr g = constant_of<double>(runtime::kFloat64, {5}, std::vector<double>(std::begin(ds), std::end(ds)));
  Expr e = tuple({f, g});
  std::string text = to_text(e);
  EXPECT_EQ(text.rfind("(constant(float32[9], [inf, -inf, nan, -nan, -0, 1e-45, 3.4028235e+38, 0.1, 16777216]), "
                       "constant(float64[5], [5e-324, ",
                       0),
            0u)
      << text;
  EXPECT_TRUE(structural_equal(parse_expr(text), e)) << text;
}

TEST(RelayText, AttributesOfEveryKind) {
  Var p("p", f32({2}));
  Attrs attrs{{"i", int64_t(-3)},
              {"f", 1.0},
              {"small", 1e-5},
              {"inf", std::numeric_limits<double>::infinity()},
              {"s", std::string("a\"b\\c")},
              {"is", std::vector<int64_t>{1, 2}},
              {"fs", std::vector<double>{1.5, 2.0}},
              {"none", std::vector<int64_t>{}}};
  Expr f = function({p}, call("relu", {p}), attrs);
  std::string text = to_text(f);
  EXPECT_EQ(text,
            "fn [f=1.0, fs=[1.5, 2.0], i=-3, inf=inf, is=[1, 2], none=[], s=\"a\\\"b\\\\c\", small=1e-05] (%p: "
            "float32[2]) {\n"
            "  relu(%p)\n"
            "}");
  EXPECT_TRUE(structural_equal(parse_expr(text), f));
}

TEST(RelayText, ExpressionsDeclareFreeVariablesWhereTheyFirstAppear) {
  Expr e = parse_expr("%0 = add(%x: float32[2], %y: float32[2]);\nrelu(add(%0, %x))");
  EXPECT_EQ(to_text(e), "%0 = add(%x: float32[2], %y: float32[2]);\n%1 = add(%0, %x);\nrelu(%1)");
  Var x("x", f32({2})), y("y", f32({2}));
  Expr built = call("relu", {call("add", {call("add", {x, y}), x})});
  EXPECT_TRUE(structural_equal(e, built, /*map_free_vars=*/true));
  EXPECT_FALSE(structural_equal(e, built));
}

TEST(RelayText, SharedNodesStaySharedAndCopiesStayApart) {
  Var x("x", f32({2}));
  Expr r = call("relu", {x});
  Expr shared = tuple({r, r});
  Expr copies = tuple({call("relu", {x}), call("relu", {x})});
  EXPECT_EQ(to_text(shared), "%0 = relu(%x: float32[2]);\n(%0, %0)");
  EXPECT_EQ(to_text(copies), "%0 = relu(%x: float32[2]);\n%1 = relu(%x);\n(%0, %1)");
  EXPECT_TRUE(structural_equal(parse_expr(to_text(shared)), shared, true));
  EXPECT_TRUE(structural_equal(parse_expr(to_text(copies)), copies, true));
  EXPECT_FALSE(structural_equal(parse_expr(to_text(shared)), copies, true));
}

TEST(RelayText, ClosuresKeepNumberingSoOuterBindingsStayVisible) {
  // The inner function uses %0 and %1 of the outer one; its own bindings must not hide them.
  Var x("x", f32({2}));
  Expr a = call("relu", {x});
  Expr b = call("add", {a, a});
  Var p("p", f32({2}));
  Function inner = function({p}, call("add", {call("relu", {call("add", {p, b})}), a}));
  Expr top = call_function(inner, {b});
  Module m(function({x}, top));
  std::string text = to_text(m);
  EXPECT_EQ(text,
            "def @main(%x: float32[2]) {\n"
            "  %0 = relu(%x);\n"
            "  %1 = add(%0, %0);\n"
            "  %2 = fn (%p: float32[2]) {\n"
            "    %3 = add(%p, %1);\n"
            "    %4 = relu(%3);\n"
            "    add(%4, %0)\n"
            "  };\n"
            "  %2(%1)\n"
            "}\n");
  expect_round_trip(m);
}

TEST(RelayText, NodesUsedInsideAndOutsideAFunctionAreBoundOutside) {
  Var x("x", f32({2}));
  Expr c = constant_of<float>(kFloat32, {2}, {1, 2});
  Var p("p", f32({2}));
  Function f = function({p}, call("add", {p, c}));  // c is also used below: bound once, outside
  Module m(function({x}, call("add", {call_function(f, {x}), c})));
  std::string text = to_text(m);
  EXPECT_NE(text.find("  %0 = constant(float32[2], [1, 2]);\n  %1 = fn (%p: float32[2]) {\n    add(%p, %0)\n  };"),
            std::string::npos)
      << text;
  expect_round_trip(m);
}

TEST(RelayText, CommentsCarryOriginsAndTypesAndAreSkipped) {
  Var x("x", f32({2}));
  Expr r = call("relu", {x}, {}, "Relu_3 */ tricky");
  Module m(function({x}, call("add", {r, r}, {}, "/Add")));
  infer_type(m);
  PrintOptions options;
  options.show_types = true;
  std::string text = to_text(m, options);
  EXPECT_EQ(text,
            "def @main(%x: float32[2]) -> float32[2] {\n"
            "  %0 = relu(%x); /* Relu_3 * / tricky */ // float32[2]\n"
            "  add(%0, %0) /* /Add */ // float32[2]\n"
            "}\n");
  Module back = parse_module(text);
  EXPECT_TRUE(structural_equal(back, m));
  EXPECT_EQ(to_text(back), "def @main(%x: float32[2]) -> float32[2] {\n  %0 = relu(%x);\n  add(%0, %0)\n}\n");
  EXPECT_TRUE(structural_equal(parse_expr("// a line comment\nrelu(/* inline */ %x: float32[2])"),
                               parse_expr("relu(%x: float32[2])"), true));
}

TEST(RelayText, LargeConstantsAreElidedUnlessAsked) {
  std::vector<float> values(64 * 3, 0.25f);
  Expr c = constant_of<float>(kFloat32, {64, 3}, values);
  EXPECT_EQ(to_text(c), "constant(float32[64, 3], ...)");
  EXPECT_THROW(parse_expr(to_text(c)), Error);
  PrintOptions all;
  all.max_constant_elements = -1;
  EXPECT_TRUE(structural_equal(parse_expr(to_text(c, all)), c));
}

TEST(RelayText, WhitespaceAndOptionalPartsAreFlexible) {
  Module m = parse_module(
      "def @f(%a: float32[2]) { %7 = relu(%a); %9 = (%7,); %9 }\n"
      "def @main(%a: float32[2],%b:float32[2])->float32[2]{add(%a,%b)}");
  EXPECT_EQ(to_text(m),
            "def @f(%a: float32[2]) {\n"
            "  %0 = relu(%a);\n"
            "  (%0,)\n"
            "}\n"
            "\n"
            "def @main(%a: float32[2], %b: float32[2]) -> float32[2] {\n"
            "  add(%a, %b)\n"
            "}\n");
  EXPECT_TRUE(parse_module("").functions().empty());
}

}  // namespace
}  // namespace tessera::relay_ir
