// A tensor's symbolic dimension as the runtime keeps it: a kernel's signature carries its
// arguments' shapes as runtime::ShapeExpr, which the runtime evaluates without the compiler.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/shape_expr.h"
#include "tensor_ir/expr.h"

namespace tessera::tensor_ir {

// `dim` built from integer constants, variables, +, -, *, floordiv, floormod, min and max; throws
// naming `dim` for anything else.
runtime::ShapeExpr to_shape_expr(const Expr& dim);
runtime::SymbolicShape to_symbolic_shape(const std::vector<Expr>& shape);
// `dim` as an expression, each of its variables `var_of(name)`.
Expr from_shape_expr(const runtime::ShapeExpr& dim, const std::function<Var(const std::string&)>& var_of);

}  // namespace tessera::tensor_ir
