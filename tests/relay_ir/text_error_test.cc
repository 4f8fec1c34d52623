// Bad text: every error says where (line:column) and what was expected there.
#include <gtest/gtest.h>

#include "relay_ir/parser.h"
#include "runtime/error.h"

namespace tessera::relay_ir {
namespace {

// The message parse_module throws for `text`, or a note that it did not throw.
std::string error_of(const std::string& text) {
  try {
    parse_module(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Checks the message starts at `where` and mentions `what`.
void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  std::string message = error_of(text);
  EXPECT_EQ(message.rfind(where + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
}

TEST(RelayTextErrors, AConstantIsCountedBeforeItIsAllocated) {
  // Found by tests/fuzz/relay_text_fuzz: the type's 400 million elements were allocated first.
  expect_error("def @main() {\n  constant(float32[99999991, 2, 2], [0, 1, 2, 3])\n}", "2:48",
               "needs 399999964 values, got 4");
  EXPECT_NE(error_of("def @main() {\n  constant(float32[4294967296, 4294967296], [0])\n}")
                .find("more elements than int64 counts"),
            std::string::npos);
}

TEST(RelayTextErrors, UnknownOperatorIsNamedWithSuggestions) {
  // Other ops may be suggested too (leaky_relu, prelu, ...); relu must be among them.
  const std::string text = "def @main(%x: float32[2]) {\n  %0 = relu(%x);\n  nn.relu(%0)\n}";
  expect_error(text, "3:3", "unknown operator 'nn.relu' (did you mean: ");
  EXPECT_NE(error_of(text).find(" relu"), std::string::npos) << error_of(text);
}

TEST(RelayTextErrors, UnknownAttributeNamesTheOpsAttributes) {
  expect_error("def @main(%x: float32[2]) {\n  add(%x, %x, alpha=1)\n}", "2:3",
               "add: unknown attribute 'alpha' (it has: none)");
}

TEST(RelayTextErrors, BadTypes) {
  expect_error("def @main(%x: float33[2]) { %x }", "1:15", "unknown data type 'float33'");
  expect_error("def @main(%x: float32x4[2]) { %x }", "1:15", "invalid element type float32x4");
  expect_error("def @main(%x: float32) { %x }", "1:22", "expected '[' after the element type float32");
  expect_error("def @main(%x: float32[2.5]) { %x }", "1:23", "expected a dimension, found '2.5'");
  expect_error("def @main(%x: (float32[2])) { %x }", "1:15", "a one-element tuple type is written (T,)");
  expect_error("def @main(%x: float32[2]) -> float32[3] { relu(%x) }", "1:27",
               "the function returns float32[2], not float32[3]");
}

TEST(RelayTextErrors, MissingClosingParenthesis) {
  expect_error("def @main(%x: float32[2]) {\n  %0 = add(%x, %x;\n  %0\n}", "2:18",
               "expected ',' or ')' after an argument, found ';'");
  expect_error("def @main(%x: float32[2] {\n  %x\n}", "1:26", "expected ',' or ')' after a parameter, found '{'");
  expect_error("def @main(%x: float32[2]) {\n  (%x, %x\n}", "3:1",
               "expected ',' or ')' after a tuple field, found '}'");
}

TEST(RelayTextErrors, UndefinedNames) {
  expect_error("def @main(%x: float32[2]) {\n  %0 = relu(%x);\n  add(%0, %5)\n}", "3:11", "undefined %5");
  expect_error("def @main(%x: float32[2]) { relu(%y) }", "1:34", "undefined %y");
  // A function's bindings and parameters are not visible after it.
  expect_error("def @main(%x: float32[2]) {\n  %0 = fn (%p: float32[2]) { %1 = relu(%p); %1 };\n  %1\n}", "3:3",
               "undefined %1");
  expect_error("def @main(%x: float32[2]) {\n  %0 = fn (%p: float32[2]) { relu(%p) };\n  %p\n}", "3:3", "undefined %p");
}

TEST(RelayTextErrors, Arity) {
  expect_error("def @main(%x: float32[2]) { relu(%x, %x) }", "1:29", "relu: takes 1 arguments, got 2");
  expect_error("def @main(%x: float32[2]) { add(%x) }", "1:29", "add: takes 2 arguments, got 1");
  expect_error("def @main(%x: float32[2]) {\n  %0 = fn (%p: float32[2]) { relu(%p) };\n  %0(%x, %x)\n}", "3:5",
               "call of a function with 1 parameters with 2 arguments");
}

TEST(RelayTextErrors, Redefinitions) {
  expect_error("def @main(%x: float32[2]) {\n  %0 = relu(%x);\n  %0 = relu(%0);\n  %0\n}", "3:3", "%0 is bound twice");
  expect_error("def @main(%x: float32[2], %x: float32[2]) { %x }", "1:27", "duplicate parameter %x");
  expect_error("def @f(%x: float32[2]) { %x }\ndef @f(%x: float32[2]) { %x }", "2:5", "@f is defined twice");
  expect_error("def @main(%x: float32[2]) { add(%x, %x: float32[2]) }", "1:37", "%x is already defined");
}

TEST(RelayTextErrors, Constants) {
  expect_error("def @main() { constant(float32[2], [1, 2, 3]) }", "1:43",
               "too many values for a constant of type float32[2]");
  expect_error("def @main() { constant(float32[3], [1, 2]) }", "1:41", "needs 3 values, got 2");
  expect_error("def @main() { constant(int8[1], [128]) }", "1:34", "128 is out of range for int8");
  expect_error("def @main() { constant(int32[1], [1.5]) }", "1:35", "expected an integer for int32, found 1.5");
  expect_error("def @main() { constant(bool[1], [2]) }", "1:34", "expected 0 or 1 for bool");
  expect_error("def @main() { constant(float16[1], [1e5]) }", "1:37", "out of range for float16");
  expect_error("def @main() { constant(float32[2, 3], ...) }", "1:39", "expected '[' before the constant's values");
}

TEST(RelayTextErrors, Lexical) {
  expect_error("def @main(%x: float32[2]) { relu(%x) } $", "1:40", "unexpected character '$'");
  expect_error("def @main(%x: float32[2]) {\n  /* never closed\n  relu(%x)\n}", "2:3", "unterminated comment");
  expect_error("def @main [s=\"abc] (%x: float32[2]) { %x }", "1:14", "unterminated string");
  expect_error("def @main [s=\"a\\n\"] (%x: float32[2]) { %x }", "1:14", "unknown escape");
  expect_error("main(%x: float32[2]) { %x }", "1:1", "expected 'def', found 'main'");
  expect_error("def @main(%x: float32[2]) { relu(%x) ", "1:38",
               "expected '}' after the function's result, found end of input");
}

TEST(RelayTextErrors, DeepHandwrittenNestingIsAnErrorNotACrash) {
  std::string text = "def @main(%x: float32[2]) { ";
  for (int i = 0; i < 10000; ++i) text += "relu(";
  text += "%x";
  for (int i = 0; i < 10000; ++i) text += ")";
  text += " }";
  std::string message = error_of(text);
  EXPECT_NE(message.find("nested more than 256 levels deep; bind inner values to %N"), std::string::npos)
      << message.substr(0, 200);
}

TEST(RelayTextErrors, ParseExprReportsTrailingText) {
  try {
    parse_expr("relu(%x: float32[2]) relu(%x)");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "1:22: expected the end of the text after the result, found 'relu'");
  }
}

}  // namespace
}  // namespace tessera::relay_ir
