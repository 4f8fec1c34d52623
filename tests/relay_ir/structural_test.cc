// Structural equality and hashing of graphs: renaming, sharing, free variables, constants, attrs.
#include <gtest/gtest.h>

#include "relay_ir/parser.h"
#include "relay_ir/structural.h"
#include "relay_ir/transforms/infer_type.h"
#include "graphs.h"

namespace tessera::relay_ir {
namespace {

using runtime::kFloat32;
using testing::constant_of;
using testing::f32;

// Checks a == b both ways and that they hash alike.
void expect_equal(const Expr& a, const Expr& b, bool map_free_vars = false) {
  EXPECT_TRUE(structural_equal(a, b, map_free_vars));
  EXPECT_TRUE(structural_equal(b, a, map_free_vars));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

void expect_unequal(const Expr& a, const Expr& b, bool map_free_vars = false) {
  EXPECT_FALSE(structural_equal(a, b, map_free_vars));
  EXPECT_FALSE(structural_equal(b, a, map_free_vars));
}

Function relu_fn(const std::string& param, Attrs attrs = {}) {
  Var p(param, f32({4}));
  return function({p}, call("relu", {call("add", {p, p})}), std::move(attrs));
}

TEST(RelayStructural, ParametersMatchUpToRenaming) {
  expect_equal(relu_fn("a"), relu_fn("b"));
  // Positions matter: add(a, b) is not add(b, a).
  Var a("a", f32({4})), b("b", f32({4})), c("c", f32({4})), d("d", f32({4}));
  expect_unequal(function({a, b}, call("add", {a, b})), function({c, d}, call("add", {d, c})));
  expect_equal(function({a, b}, call("add", {a, b})), function({d, c}, call("add", {d, c})));
  // So do parameter types.
  Var e("e", tensor_type({4}, runtime::kInt32));
  expect_unequal(function({a}, a), function({e}, e));
}

TEST(RelayStructural, AttrsAndConstantsMustMatchExactly) {
  expect_unequal(relu_fn("p", {{"primitive", int64_t(1)}}), relu_fn("p", {{"primitive", int64_t(2)}}));
  expect_unequal(relu_fn("p", {{"primitive", int64_t(1)}}), relu_fn("p"));
  expect_unequal(relu_fn("p", {{"x", int64_t(1)}}), relu_fn("p", {{"x", 1.0}}));  // int vs float
  Expr c1 = constant_of<float>(kFloat32, {2}, {1, 2});
  expect_equal(c1, constant_of<float>(kFloat32, {2}, {1, 2}));
  expect_unequal(c1, constant_of<float>(kFloat32, {2}, {1, 3}));
  expect_unequal(c1, constant_of<float>(kFloat32, {2, 1}, {1, 2}));
  expect_unequal(c1, constant_of<int32_t>(runtime::kInt32, {2}, {1, 2}));
  expect_unequal(constant_of<float>(kFloat32, {1}, {0.0f}), constant_of<float>(kFloat32, {1}, {-0.0f}));  // bytes
  Var x("x", f32({2}));
  expect_unequal(tuple_get(tuple({x, x}), 0), tuple_get(tuple({x, x}), 1));
  expect_unequal(call("relu", {x}), call("add", {x, x}));
  expect_unequal(tuple({x}), tuple({x, x}));
}

TEST(RelayStructural, SharingMustCorrespond) {
  Var x("x", f32({2}));
  Expr r = call("relu", {x});
  Expr shared = call("add", {r, r});
  Expr copies = call("add", {call("relu", {x}), call("relu", {x})});
  expect_unequal(shared, copies);
  expect_equal(copies, call("add", {call("relu", {x}), call("relu", {x})}));
  // Sharing below a node both sides have in common counts too: the constant c is used twice
  // on the left, and the right uses two equal copies.
  Expr c = constant_of<float>(kFloat32, {2}, {1, 2});
  Expr c2 = constant_of<float>(kFloat32, {2}, {1, 2});
  Expr inner = call("add", {x, c});
  expect_unequal(tuple({inner, c}), tuple({inner, c2}));
  expect_equal(tuple({inner, c}), tuple({call("add", {x, c2}), c2}));
}

TEST(RelayStructural, FreeVariablesAreIdentitiesUnlessMapped) {
  Var x("x", f32({2})), y("x", f32({2})), z("z", f32({3}));
  expect_equal(call("relu", {x}), call("relu", {x}));
  expect_unequal(call("relu", {x}), call("relu", {y}));
  expect_equal(call("relu", {x}), call("relu", {y}), /*map_free_vars=*/true);
  expect_unequal(call("relu", {x}), call("relu", {z}), true);  // types still count
  // A mapping is one-to-one.
  expect_unequal(call("add", {x, y}), call("add", {x, x}), true);
  // Equal graphs hash alike whatever their free variables are.
  EXPECT_EQ(structural_hash(call("relu", {x})), structural_hash(call("relu", {y})));
}

TEST(RelayStructural, OriginsAndInferredTypesAreNotStructure) {
  Var x("x", f32({2}));
  Expr a = call("relu", {x}, {}, "node_a");
  Expr b = call("relu", {x}, {}, "node_b");
  infer_type(a);
  expect_equal(a, b);
}

TEST(RelayStructural, ModulesCompareFunctionsByName) {
  Module a;
  a.add("main", relu_fn("p"));
  a.add("helper", relu_fn("q", {{"primitive", int64_t(1)}}));
  Module b;
  b.add("helper", relu_fn("r", {{"primitive", int64_t(1)}}));
  b.add("main", relu_fn("s"));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  Module c;
  c.add("main", relu_fn("p"));
  c.add("other", relu_fn("q", {{"primitive", int64_t(1)}}));
  EXPECT_FALSE(structural_equal(a, c));
  EXPECT_NE(structural_hash(a), structural_hash(c));
  EXPECT_FALSE(structural_equal(a, Module(relu_fn("p"))));
}

TEST(RelayStructural, HashesFollowStructureNotAddresses) {
  const char* text =
      "def @main(%x: float32[2], %y: float32[2]) {\n"
      "  %0 = fn [primitive=1] (%p: float32[2]) { relu(%p) };\n"
      "  %1 = %0(%x);\n"
      "  (%1, add(%1, constant(float32[2], [1, 2])), %y)\n"
      "}\n";
  Module a = parse_module(text);
  Module b = parse_module(text);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_hash(a.main()), structural_hash(b.main()));
  // Small changes change the hash.
  std::string changed = text;
  changed.replace(changed.find("[1, 2]"), 6, "[1, 3]");
  EXPECT_NE(structural_hash(parse_module(changed)), structural_hash(a));
  std::string swapped = text;
  swapped.replace(swapped.find("(%1, add"), 8, "(%y, add");
  swapped.replace(swapped.rfind("%y)"), 3, "%1)");
  EXPECT_NE(structural_hash(parse_module(swapped)), structural_hash(a));
}

TEST(RelayStructural, Types) {
  Type a = tuple_type({f32({2}), tensor_type({}, runtime::kInt64)});
  Type b = tuple_type({f32({2}), tensor_type({}, runtime::kInt64)});
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_FALSE(structural_equal(a, tuple_type({f32({2})})));
  EXPECT_NE(structural_hash(f32({2, 3})), structural_hash(f32({3, 2})));
}

}  // namespace
}  // namespace tessera::relay_ir
