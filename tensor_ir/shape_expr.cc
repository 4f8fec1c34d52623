#include "tensor_ir/shape_expr.h"

#include "runtime/error.h"
#include "tensor_ir/ir.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {

namespace {

using runtime::ShapeExpr;

template <typename T>
ShapeExpr binary(ShapeExpr::Op op, const T* node) {
  return ShapeExpr::binary(op, to_shape_expr(node->a), to_shape_expr(node->b));
}

}  // namespace

ShapeExpr to_shape_expr(const Expr& dim) {
  if (const auto* c = dim.as<IntImm>()) return c->value;
  if (const auto* v = dim.as<VarNode>()) return ShapeExpr::var(v->name);
  if (const auto* c = dim.as<Cast>(); c && c->value.type().is_integer()) return to_shape_expr(c->value);
  if (const auto* n = dim.as<Add>()) return binary(ShapeExpr::Op::Add, n);
  if (const auto* n = dim.as<Sub>()) return binary(ShapeExpr::Op::Sub, n);
  if (const auto* n = dim.as<Mul>()) return binary(ShapeExpr::Op::Mul, n);
  if (const auto* n = dim.as<FloorDiv>()) return binary(ShapeExpr::Op::FloorDiv, n);
  if (const auto* n = dim.as<FloorMod>()) return binary(ShapeExpr::Op::FloorMod, n);
  if (const auto* n = dim.as<Min>()) return binary(ShapeExpr::Op::Min, n);
  if (const auto* n = dim.as<Max>()) return binary(ShapeExpr::Op::Max, n);
  fail("the dimension ", to_string(dim),
       " is not an integer expression of constants and variables (+, -, *, floordiv, floormod, min, max)");
}

runtime::SymbolicShape to_symbolic_shape(const std::vector<Expr>& shape) {
  runtime::SymbolicShape dims;
  for (const Expr& d : shape) dims.push_back(to_shape_expr(d));
  return dims;
}

Expr from_shape_expr(const ShapeExpr& dim, const std::function<Var(const std::string&)>& var_of) {
  if (dim.is_constant()) return dim.constant();
  if (const std::string* name = dim.var_name()) return var_of(*name);
  const Expr a = from_shape_expr(dim.lhs(), var_of), b = from_shape_expr(dim.rhs(), var_of);
  switch (dim.op()) {
    case ShapeExpr::Op::Add:
      return a + b;
    case ShapeExpr::Op::Sub:
      return a - b;
    case ShapeExpr::Op::Mul:
      return a * b;
    case ShapeExpr::Op::FloorDiv:
      return floordiv(a, b);
    case ShapeExpr::Op::FloorMod:
      return floormod(a, b);
    case ShapeExpr::Op::Min:
      return min(a, b);
    default:
      return max(a, b);
  }
}

}  // namespace tessera::tensor_ir
